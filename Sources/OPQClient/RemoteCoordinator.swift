import Foundation
import OPQCore
import OPQWire
import ZeroMQ

/// A connection to an `opq-coordinator`, shared by the ``RemoteOperationQueue``s and
/// ``RemoteOperation``s of a program.
///
/// It holds one ZeroMQ DEALER socket, owned by a thread of its own, and one event stream (the
/// coordinator's `Watch`, Clone pattern: a snapshot, then numbered events) that keeps the state of every
/// operation this program added current. Requests from any thread are queued to that thread; blocking
/// calls wait for their reply, `async` ones suspend.
///
/// ```swift
/// let coordinator = try RemoteCoordinator(endpoint: "tcp://127.0.0.1:7131")
/// let images = RemoteOperationQueue(name: "images", coordinator: coordinator)
/// let render = RemoteOperationQueue(name: "render", coordinator: coordinator)
/// ```
///
/// Thread-safe. ``close()`` (or the last reference going away) ends the connection; requests still
/// waiting then throw ``ClientError/closed(endpoint:)``.
// @unchecked Sendable: `tracking`, `reservations`, `inFlight` and the renewal are read and changed only under `lock`; the socket belongs to `loop`'s thread.
public final class RemoteCoordinator: @unchecked Sendable {
    /// The coordinator's client endpoint, e.g. `tcp://127.0.0.1:7131` or `ipc:///run/opq/clients`.
    public let endpoint: String
    /// How the connection is secured.
    public let security: ConnectionSecurity
    /// Seconds a request waits for its reply before it throws ``ClientError/timeout(endpoint:seconds:)``.
    /// Waits (``RemoteOperationQueue/waitUntilAllOperationsAreFinished()``) are not limited by it.
    public let requestTimeout: Double

    let loop: ClientLoop
    /// Guards the tracking state (`RemoteCoordinator+Stream.swift`), the reservations and the submissions
    /// in flight (`RemoteCoordinator+Submit.swift`); broadcast when a submission ends.
    let lock = NSCondition()
    var tracking = Tracking()
    /// The reservation of each operation not added yet that an accepted operation depends on.
    var reservations: [ObjectIdentifier: Reservation] = [:]
    /// Operations whose submission was sent and not answered yet.
    var inFlight = Set<ObjectIdentifier>()
    /// The timer renewing the reservations' lease, and its interval (`RemoteCoordinator+Submit.swift`).
    var renewal: (timer: any DispatchSourceTimer, interval: Double)?
    /// Set when the connection closes: no renewal starts after.
    var renewalClosed = false
    /// The timer that asks for the watch again after a silence (`checkWatch()`, a coordinator restart).
    var watchCheck: (any DispatchSourceTimer)?

    /// Connects to the coordinator at `endpoint` and starts its event stream.
    ///
    /// - Parameters:
    ///   - security: `.none` (default) for `ipc://` and loopback endpoints; see ``ConnectionSecurity``.
    ///   - timeout: seconds to wait for the coordinator to answer, here and for every later request.
    /// - Throws: ``ClientError/timeout(endpoint:seconds:)`` when no coordinator answers (is
    ///   `opq-coordinator` running?), ``ClientError/transport(_:)`` for an invalid endpoint.
    public init(endpoint: String, security: ConnectionSecurity = .none, timeout: Double = 10) throws(ClientError) {
        self.endpoint = endpoint
        self.security = security
        requestTimeout = timeout
        do {
            loop = try ClientLoop(endpoint: endpoint, security: security)
        } catch {
            throw .transport(error)
        }
        loop.onStream = { [weak self] message in self?.receive(message) }
        loop.start()
        do {
            try startWatching(timeout: timeout)
        } catch {
            if case let .timeout(endpoint, seconds) = error, let refusal = loop.keyRefusal() {
                loop.close()
                throw .keyNotAccepted(endpoint: endpoint, seconds: seconds, reason: refusal)
            }
            loop.close()
            throw error
        }
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let interval = Self.watchCheckSeconds / 2
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(500))
        timer.setEventHandler { [weak self] in self?.checkWatch() }
        lock.withLock { watchCheck = timer }
        timer.resume()
    }

    deinit {
        giveUpReservations(timeout: 0)
        loop.close()
        connectionDidClose()
    }

    /// Ends the connection: requests and waits still pending throw ``ClientError/closed(endpoint:)``;
    /// operations keep the state they had. Safe to call more than once.
    ///
    /// Operations added through it that wait for an operation never added (a dependency on an operation
    /// in no queue) stop waiting for it: the coordinator treats that operation as finished `cancelled`
    /// (so they run, or are cancelled under `requires: .success`).
    public func close() {
        giveUpReservations(timeout: min(requestTimeout, 5))
        loop.close()
        connectionDidClose()
    }

    // MARK: Requests

    /// Sends a request built by `fill` and blocks until its reply (or `timeout` seconds; nil = as long
    /// as it takes).
    ///
    /// `onLoop`, when given, runs on the connection's thread as the reply arrives, before any later
    /// message of the stream is applied (e.g. to bind submitted operations to their ids).
    @discardableResult
    func request(
        timeout: Double?, onLoop: (@Sendable (Opq_V1_Reply) -> Void)? = nil,
        _ fill: (inout Opq_V1_ClientRequest) -> Void
    ) throws(ClientError) -> (reply: Opq_V1_Reply, raw: [[UInt8]]) {
        let slot = ReplySlot()
        let id = loop.send(fill) { result in
            if case .success(let answer) = result { onLoop?(answer.reply) }
            slot.fill(result)
        }
        if let result = slot.wait(timeout: timeout) { return try result.get() }
        guard loop.abandon(id) else {
            // The reply is being handled right now: take it (the handler fills the slot at once).
            return try slot.wait(timeout: nil)!.get()
        }
        throw .timeout(endpoint: endpoint, seconds: timeout ?? 0)
    }

    /// The `async` form of ``request(timeout:onLoop:_:)``.
    func asyncRequest(timeout: Double?, _ fill: (inout Opq_V1_ClientRequest) -> Void) async throws -> Opq_V1_Reply {
        let once = ResumeOnce()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Opq_V1_Reply, any Error>) in
            let id = loop.send(fill) { result in
                guard once.claim() else { return }
                continuation.resume(with: result.map(\.reply).mapError { $0 as any Error })
            }
            if let timeout, let date = WaitDeadline(seconds: timeout).date {
                DispatchQueue.global().asyncAfter(deadline: .now() + max(0, date.timeIntervalSinceNow)) { [loop, endpoint] in
                    guard loop.abandon(id), once.claim() else { return }
                    continuation.resume(throwing: ClientError.timeout(endpoint: endpoint, seconds: timeout))
                }
            }
        }
    }

    /// Sends a request on behalf of `operation` without waiting; a refusal is kept in its
    /// ``RemoteOperation/lastError``.
    func sendAndForget(for operation: RemoteOperation, _ fill: (inout Opq_V1_ClientRequest) -> Void) {
        loop.send(fill) { [weak operation] result in
            if case .failure(let error) = result { operation?.record(error) }
        }
    }
}

/// One blocking caller's reply: filled once on the loop thread, waited for with a deadline.
// @unchecked Sendable: `result` is guarded by `condition`, `claimed` by `lock`.
final class ReplySlot: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<(reply: Opq_V1_Reply, raw: [[UInt8]]), ClientError>?

    func fill(_ value: Result<(reply: Opq_V1_Reply, raw: [[UInt8]]), ClientError>) {
        condition.withLock {
            result = value
            condition.broadcast()
        }
    }

    /// The result, or nil when `timeout` seconds passed first (nil timeout = no limit).
    func wait(timeout: Double?) -> Result<(reply: Opq_V1_Reply, raw: [[UInt8]]), ClientError>? {
        let deadline = WaitDeadline(seconds: timeout)
        return condition.withLock {
            while result == nil {
                if !condition.wait(until: deadline) { break }
            }
            return result
        }
    }
}

/// Lets exactly one of two racing paths (a reply, a timeout) resume a continuation.
// @unchecked Sendable: `claimed` is guarded by `lock`.
final class ResumeOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var claimed = false

    func claim() -> Bool {
        lock.withLock {
            defer { claimed = true }
            return !claimed
        }
    }
}
