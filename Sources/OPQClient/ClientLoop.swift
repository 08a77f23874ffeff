import Foundation
import OPQWire
import ZeroMQ

/// The one thread that owns a ``RemoteCoordinator``'s DEALER socket (a ZeroMQ socket belongs to one
/// thread). Other threads hand it requests through a lock-protected outbox and wake it with one byte on
/// an `inproc` PUSH/PULL pair; it sends them, matches replies to their handlers by request id, and hands
/// every stream message (snapshot, events) to ``onStream``.
///
/// Handlers and ``onStream`` run on the loop thread, in the order the messages arrived, so a reply's
/// handler sees exactly the stream messages that preceded it. They must be quick and must never wait
/// for another reply.
// @unchecked Sendable: the sockets belong to the loop thread; what other threads touch (`outbox`, `handlers`, `nextRequestID`, `signalled`, `closed`, `thread`) is guarded by `lock`.
final class ClientLoop: @unchecked Sendable {
    /// What a request gets back: the reply (never an `error` one) and its raw frames, or why not.
    typealias Handler = @Sendable (Result<(reply: Opq_V1_Reply, raw: [[UInt8]]), ClientError>) -> Void

    let endpoint: String
    /// Every non-reply message from the coordinator, on the loop thread. Set before ``start()``.
    var onStream: (Opq_V1_CoordinatorToClient) -> Void = { _ in }

    private let context: Context
    private let dealer: Socket
    private let pull: Socket
    private let push: Socket
    private let lock = NSLock()
    private var nextRequestID: UInt64 = 1
    private var handlers: [UInt64: Handler] = [:]
    private var outbox: [[[UInt8]]] = []
    private var signalled = false
    private var closed = false
    private let stopped = DispatchSemaphore(value: 0)
    private var thread: Thread?
    /// Over CURVE: the dealer's handshakes (read by the thread that connects, never by the loop).
    private let handshakes: HandshakeWatch?

    /// Creates the sockets and connects (ZeroMQ connects in the background).
    init(endpoint: String, security: ConnectionSecurity) throws(ZMQError) {
        self.endpoint = endpoint
        context = try Context()
        dealer = try context.socket(.dealer)
        pull = try context.socket(.pull)
        push = try context.socket(.push)
        try dealer.set(.linger, 0)
        try dealer.set(.maxMessageSize, Int64(WireLimits.maxFrameBytes))
        // The coordinator drops a watcher whose queue is full; never let ours fill.
        try dealer.set(.receiveHWM, 0)
        try dealer.set(.sendHWM, 0)
        try security.apply(to: dealer)
        handshakes = security.isCurve ? try HandshakeWatch(dealer) : nil
        let wake = "inproc://opq-client-\(UInt64.random(in: 0...UInt64.max))"
        try pull.bind(wake)
        try push.connect(wake)
        try push.set(.linger, 0)
        try dealer.connect(endpoint)
    }

    /// Starts the loop thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "opq-client"
        thread.stackSize = 512 * 1024
        lock.withLock { self.thread = thread }
        thread.start()
    }

    /// Queues request `fill` and returns its id; `handler` gets the reply (or the reason there is none).
    @discardableResult
    func send(_ fill: (inout Opq_V1_ClientRequest) -> Void, handler: @escaping Handler) -> UInt64 {
        lock.lock()
        let id = nextRequestID
        nextRequestID += 1
        guard !closed else {
            lock.unlock()
            handler(.failure(.closed(endpoint: endpoint)))
            return id
        }
        let frames: [[UInt8]]
        do {
            frames = try Frames.encode(Opq_V1_ClientRequest.request(id, fill))
        } catch {
            lock.unlock()
            handler(.failure(.malformed(error)))
            return id
        }
        handlers[id] = handler
        outbox.append(frames)
        wakeLocked()
        lock.unlock()
        return id
    }

    /// Why the coordinator did not accept this CURVE connection, if its handshake failed (see
    /// ``HandshakeWatch``); nil without CURVE. From the thread that created the loop.
    func keyRefusal() -> KeyRefusal? { handshakes?.refusalSoFar() }

    /// Forgets request `id` (its caller gave up); a late reply is dropped. Returns whether it was pending.
    @discardableResult
    func abandon(_ id: UInt64) -> Bool { lock.withLock { handlers.removeValue(forKey: id) != nil } }

    /// Stops the loop, failing every pending request with `ClientError.closed`; waits for the thread.
    /// Safe to call more than once, from any thread but the loop's.
    func close() {
        let (first, loopThread) = lock.withLock {
            defer { closed = true }
            if !closed { wakeLocked() }
            return (!closed, thread)
        }
        // From the loop thread itself (a handler dropped the last reference) the loop ends on its own.
        if first, let loopThread, loopThread !== Thread.current { stopped.wait() }
    }

    private func wakeLocked() {
        guard !signalled else { return }
        signalled = true
        _ = try? push.send(frame: [1], flags: .dontWait)
    }

    private func run() {
        var poller = Poller()
        do {
            let dealerIndex = try poller.add(dealer)
            let pullIndex = try poller.add(pull)
            while true {
                try poller.poll(timeout: -1)
                if poller.isReadable(pullIndex) {
                    while try pull.receiveMultipart(flags: .dontWait) != nil {}
                    let (frames, stop) = lock.withLock {
                        signalled = false
                        defer { outbox.removeAll() }
                        return (outbox, closed)
                    }
                    if stop { break }
                    for message in frames { try sendOrFail(message) }
                }
                if poller.isReadable(dealerIndex) {
                    while let frames = try dealer.receiveMultipart(flags: .dontWait) { deliver(frames) }
                }
            }
        } catch {
            failAll(.transport(error))
        }
        failAll(.closed(endpoint: endpoint))
        lock.withLock { closed = true }
        dealer.close()
        pull.close()
        push.close()
        context.close()
        stopped.signal()
    }

    private func sendOrFail(_ frames: [[UInt8]]) throws(ZMQError) {
        guard try dealer.send(frames, flags: .dontWait) != .sent else { return }
        // Unbounded queues never refuse; a refusal would mean the socket is unusable.
        throw ZMQError(call: "zmq_msg_send", code: EAGAIN)
    }

    private func deliver(_ frames: [[UInt8]]) {
        let message: Opq_V1_CoordinatorToClient
        let raw: [[UInt8]]
        do {
            (message, raw) = try Frames.decode(frames, as: Opq_V1_CoordinatorToClient.self)
        } catch {
            // The request it answers cannot be known; its caller's deadline reports it.
            return
        }
        guard case .reply(let reply) = message.body else { return onStream(message) }
        guard let handler = lock.withLock({ handlers.removeValue(forKey: reply.requestID) }) else { return }
        if case .error(let error) = reply.result {
            handler(.failure(.refused(Refusal(error))))
        } else {
            handler(.success((reply, raw)))
        }
    }

    private func failAll(_ error: ClientError) {
        let pending = lock.withLock {
            defer { handlers.removeAll() }
            return handlers.values
        }
        for handler in pending { handler(.failure(error)) }
    }
}
