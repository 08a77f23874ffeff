import Foundation
import OPQCore
import OPQWire

/// A named queue of a coordinator: Foundation's `OperationQueue`, spread over a cluster.
///
/// Operations added to it are run by the cluster's workers in the queue's order (priority, then first
/// in first out), at most ``maxConcurrentOperationCount`` at once across all workers, respecting
/// dependencies across queues, barriers and suspension (SEMANTICS §3–§6). Queues are shared: every
/// client that names the same queue on the same coordinator sees the same queue.
///
/// ```swift
/// let queue = try RemoteOperationQueue(name: "thumbnails", endpoint: "tcp://127.0.0.1:7131")
/// queue.maxConcurrentOperationCount = 4
/// for path in paths { try queue.addOperation(handler: "thumbnail", payload: Array(path.utf8)) }
/// try queue.addBarrier(command: ["make-index", "thumbs/"])
/// queue.waitUntilAllOperationsAreFinished()
/// ```
///
/// Properties that Foundation offers as plain properties (``operationCount``, ``isSuspended``…) ask the
/// coordinator each time they are read or set; they cannot throw, so a failed request leaves the last
/// known value and keeps the error in ``lastError``. The `throws` forms (``status()``,
/// ``setSuspended(_:)``…) report it instead. Thread-safe.
// @unchecked Sendable: `lastKnown` and `failure` are guarded by `lock`; `queueProgress` is Foundation's thread-safe `Progress`.
public final class RemoteOperationQueue: @unchecked Sendable, CustomStringConvertible {
    /// The queue's name on the coordinator (`default` is the coordinator's default queue).
    public let name: String
    /// The connection it uses.
    public let coordinator: RemoteCoordinator

    private let lock = NSLock()
    private var lastKnown = QueueStatus(name: "")
    private var failure: ClientError?
    private let queueProgress = Progress(totalUnitCount: 0)

    /// The queue `name` of `coordinator` (created on the coordinator when first used).
    public init(name: String = "default", coordinator: RemoteCoordinator) {
        self.name = name
        self.coordinator = coordinator
        lastKnown = QueueStatus(name: name)
    }

    /// The queue `name` over a connection of its own to the coordinator at `endpoint`.
    /// - Throws: ``ClientError/timeout(endpoint:seconds:)`` when no coordinator answers.
    public convenience init(name: String = "default", endpoint: String, security: ConnectionSecurity = .none) throws(ClientError) {
        self.init(name: name, coordinator: try RemoteCoordinator(endpoint: endpoint, security: security))
    }

    public var description: String { "queue '\(name)' at \(coordinator.endpoint)" }

    /// The error of the last request made by a non-throwing property or method; nil if it succeeded.
    public var lastError: ClientError? { lock.withLock { failure } }

    // MARK: Adding

    /// Adds `operation`; the coordinator accepts it before this returns.
    /// - Throws: ``ClientError/alreadyAdded(operation:)`` if it was added before (to any queue);
    ///   the coordinator's refusal (e.g. a duplicate name, an invalid field); a refusal with code
    ///   `unknownDependency` when it depends on an operation added through another coordinator; a
    ///   transport error.
    public func addOperation(_ operation: RemoteOperation) throws(ClientError) {
        try RemoteOperation.checkDependencies(of: [operation], coordinator: coordinator)
        try coordinator.submit([operation], queue: name)
    }

    /// Adds `operations` as one atomic batch (one job): all are ordered by priority before any of them
    /// runs, and dependencies among them go with the batch. With `wait`, returns when all have finished.
    /// - Throws: as ``addOperation(_:)``; a refused batch adds none of its operations.
    public func addOperations(_ operations: [RemoteOperation], waitUntilFinished wait: Bool) throws(ClientError) {
        guard !operations.isEmpty else { return }
        try RemoteOperation.checkDependencies(of: operations, coordinator: coordinator)
        try coordinator.submit(operations, queue: name)
        if wait { for operation in operations { operation.waitUntilFinished() } }
    }

    /// Adds a command run by a worker, without a shell; returns its operation.
    @discardableResult
    public func addOperation(command argv: [String], environment: [String: String] = [:]) throws(ClientError) -> RemoteOperation {
        let operation = RemoteOperation(command: argv, environment: environment)
        try addOperation(operation)
        return operation
    }

    /// Adds a handler operation (run in-process by a worker that registered `handler`); returns it.
    @discardableResult
    public func addOperation(handler: String, payload: [UInt8] = []) throws(ClientError) -> RemoteOperation {
        let operation = RemoteOperation(handler: handler, payload: payload)
        try addOperation(operation)
        return operation
    }

    /// Adds a barrier (Foundation's `addBarrierBlock`): it waits until everything added to this queue
    /// before it has finished, and everything added after it waits for it. It runs `command` when
    /// given, else nothing. Barriers are left out of ``operationCount`` and ``progress``.
    @discardableResult
    public func addBarrier(command argv: [String]? = nil) throws(ClientError) -> RemoteOperation {
        let operation = RemoteOperation(work: argv.map { .command(Command($0)) } ?? .empty)
        operation.condition.withLock { operation.definition.isBarrier = true }
        try addOperation(operation)
        return operation
    }

    // MARK: Cancelling and waiting

    /// Cancels every unfinished operation of the queue at this moment, barriers included (operations
    /// added later are not affected). The cancelled operations this program holds turn ``RemoteOperation/isCancelled`` at once.
    public func cancelAllOperations() throws(ClientError) {
        let reply = try coordinator.request(timeout: coordinator.requestTimeout) { $0.cancel.queue = name }.reply
        for id in reply.cancelled.operations { coordinator.tracked(OperationID(id))?.markCancelled() }
    }

    /// Blocks until the queue has nothing unfinished, including operations added meanwhile (by anyone).
    /// A failed request (the connection closed) returns and is kept in ``lastError``.
    public func waitUntilAllOperationsAreFinished() {
        do { _ = try waitUntilAllOperationsAreFinished(timeout: nil) } catch { remember(error) }
    }

    /// Blocks until the queue has nothing unfinished or `timeout` seconds pass (nil, `.infinity` or more
    /// than about 100 years = no limit); returns whether it had finished.
    /// - Throws: the coordinator's refusal of a negative timeout or NaN; a transport error.
    public func waitUntilAllOperationsAreFinished(timeout: Double?) throws(ClientError) -> Bool {
        let timeout = WaitDeadline.limit(timeout)
        let reply = try coordinator.request(timeout: timeout.map { $0 + coordinator.requestTimeout }) {
            $0.wait.queue = name
            if let timeout { $0.wait.timeoutSeconds = timeout }
        }.reply
        remember(QueueStatus(reply.waited.queue))
        return !reply.waited.timedOut
    }

    /// `async` form: returns when the queue has nothing unfinished, without blocking a thread.
    public func allOperationsFinished() async throws {
        let reply = try await coordinator.asyncRequest(timeout: nil) { $0.wait.queue = name }
        remember(QueueStatus(reply.waited.queue))
    }

    // MARK: State

    /// The queue's settings and counts, fresh from the coordinator.
    public func status() throws(ClientError) -> QueueStatus {
        let reply = try coordinator.request(timeout: coordinator.requestTimeout) { $0.listQueues = Opq_V1_ListQueues() }.reply
        let status = reply.queues.queues.first { $0.name == name }.map(QueueStatus.init) ?? QueueStatus(name: name)
        remember(status)
        return status
    }

    /// Unfinished operations (pending, ready, dispatched, executing), barriers excluded.
    public var operationCount: Int { current.counts.unfinished }

    /// The unfinished operations, in submission order, barriers excluded — also those other clients
    /// added (their handles follow the event stream like this program's own).
    public var operations: [RemoteOperation] {
        do { return try unfinishedOperations() } catch {
            remember(error)
            return []
        }
    }

    /// Whether the queue is suspended: nothing of it starts while it is; running operations continue.
    public var isSuspended: Bool {
        get { current.isSuspended }
        set { do { try setSuspended(newValue) } catch { remember(error) } }
    }

    /// How many of its operations may run at once across the cluster: -1 = no limit (the default),
    /// 0 = nothing starts, N > 0 = at most N.
    public var maxConcurrentOperationCount: Int {
        get { current.maxConcurrentOperationCount }
        set { do { try setMaxConcurrentOperationCount(newValue) } catch { remember(error) } }
    }

    /// Suspends or resumes the queue.
    public func setSuspended(_ suspended: Bool) throws(ClientError) {
        try configure(QueueSettings(isSuspended: suspended))
    }

    /// Sets ``maxConcurrentOperationCount``.
    /// - Throws: the coordinator's refusal for a value below -1.
    public func setMaxConcurrentOperationCount(_ count: Int) throws(ClientError) {
        try configure(QueueSettings(maxConcurrent: count))
    }

    /// The queue's progress (Foundation `Progress`): `totalUnitCount` operations ever added (barriers
    /// excluded), `completedUnitCount` of them finished, with any outcome. Refreshed on every read.
    public var progress: Progress {
        let counts = current.counts
        queueProgress.totalUnitCount = Int64(counts.total)
        queueProgress.completedUnitCount = Int64(counts.finished)
        return queueProgress
    }

    private func configure(_ settings: QueueSettings) throws(ClientError) {
        try coordinator.request(timeout: coordinator.requestTimeout) { $0.setQueue = Opq_V1_QueueSettings(queue: name, settings) }
    }

    /// Fresh status, or the last known one when the coordinator cannot be asked.
    private var current: QueueStatus {
        do { return try status() } catch {
            remember(error)
            return lock.withLock { lastKnown }
        }
    }

    private func unfinishedOperations() throws(ClientError) -> [RemoteOperation] {
        var result: [RemoteOperation] = []
        var after: UInt64 = 0
        while true {
            let list = try coordinator.request(timeout: coordinator.requestTimeout) {
                $0.listOperations.queue = name
                $0.listOperations.states = [.pending, .ready, .dispatched, .executing]
                $0.listOperations.after = after
            }.reply.operations
            result += list.operations.filter { !$0.barrier }.map(coordinator.adopt)
            guard list.more, let last = list.operations.last else { return result }
            after = last.id
        }
    }

    private func remember(_ status: QueueStatus) { lock.withLock { lastKnown = status } }

    private func remember(_ error: ClientError) { lock.withLock { failure = error } }
}

/// A queue's settings and counts as the coordinator reported them.
public struct QueueStatus: Sendable, Hashable {
    /// The queue's name.
    public var name: String
    /// -1 = no limit, 0 = nothing starts, N > 0 = at most N at once.
    public var maxConcurrentOperationCount = -1
    /// Whether it is suspended.
    public var isSuspended = false
    /// Its operations by state and outcome, barriers excluded; `counts.unfinished` = `operationCount`.
    public var counts = OperationCounts()
    /// Unfinished barriers.
    public var barriers = 0
    /// Ready operations no live worker is large enough for, one line each ("op-5 and 2 more: needs …").
    public var tooLarge: [String] = []

    init(name: String) { self.name = name }

    init(_ info: Opq_V1_QueueInfo) {
        name = info.name
        maxConcurrentOperationCount = Int(info.maxConcurrent)
        isSuspended = info.suspended
        counts = info.counts.core
        barriers = Int(info.barriers)
        tooLarge = info.tooLarge
    }
}
