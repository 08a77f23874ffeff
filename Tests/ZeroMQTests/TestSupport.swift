import Foundation
import ZeroMQ

/// The upper bound for anything a test waits for: generous for a loaded 2-core machine, while
/// a passing test returns as soon as the awaited event happens.
let patience: Duration = .seconds(5)

/// Receives one message from `socket`, waiting on a ``Poller`` until `timeout` has passed;
/// `nil` if none arrived by then.
func receive(_ socket: Socket, within timeout: Duration = patience) throws -> [[UInt8]]? {
    let deadline = ContinuousClock.now + timeout
    var poller = Poller()
    try poller.add(socket)
    while true {
        if let message = try socket.receiveMultipart(flags: .dontWait) { return message }
        let remaining = ContinuousClock.now.duration(to: deadline)
        if remaining <= .zero { return nil }
        try poller.poll(timeout: Int((remaining / .milliseconds(1)).rounded(.up)))
    }
}

/// The bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A ROUTER bound to an ephemeral loopback port, configured by `configure` before binding.
func boundRouter(
    _ context: Context, _ configure: (Socket) throws -> Void = { _ in }
) throws -> (socket: Socket, endpoint: String) {
    let router = try context.socket(.router)
    try configure(router)
    return (router, try router.bind("tcp://127.0.0.1:*"))
}

/// A DEALER with routing id `id` (if given), configured by `configure`, connected to `endpoint`.
func connectedDealer(
    _ context: Context, to endpoint: String, id: String? = nil,
    _ configure: (Socket) throws -> Void = { _ in }
) throws -> Socket {
    let dealer = try context.socket(.dealer)
    if let id { try dealer.set(.routingID, bytes(id)) }
    try configure(dealer)
    try dealer.connect(endpoint)
    return dealer
}

/// A one-shot event a thread signals and a test waits for, with a deadline.
final class Signal: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    /// Marks the event as happened.
    func fire() { semaphore.signal() }

    /// Whether the event happened within `timeout`.
    func wait(within timeout: Duration = patience) -> Bool {
        semaphore.wait(timeout: .now() + timeout / .seconds(1)) == .success
    }
}

/// Runs `body` on a new thread; the returned signal fires when it returns.
func spawn(_ body: @escaping @Sendable () -> Void) -> Signal {
    let done = Signal()
    Thread.detachNewThread {
        body()
        done.fire()
    }
    return done
}

/// A value shared between a test and a thread it started.
final class Shared<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
