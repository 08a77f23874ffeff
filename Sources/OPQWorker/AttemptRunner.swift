import Foundation
import OPQCore
import OPQSpawn

/// Runs the attempts a worker is given, one slot per concurrent attempt (DESIGN "Worker"), and reports
/// each attempt exactly once.
///
/// An attempt whose start never blocks — a command (it is spawned and watched by the ``ChildMonitor``),
/// an empty operation, a ``HandlerOperation`` (it runs on a thread of its own, or returns at once) — is
/// started by the thread that gives it a slot: the socket thread that received its dispatch, or the
/// thread that reported the attempt whose slot it takes. No hop through a queue thread and back: this
/// was most of a command's latency between the dispatch and the spawn. Any other operation (a handler
/// factory's own `Operation`, which may block) runs on a local Foundation `OperationQueue`. Attempts
/// beyond the slots (a coordinator never sends them, SEMANTICS §4) wait in arrival order for a slot.
///
/// This is the worker's execution layer, with no networking: the connection layer calls ``run(_:)``,
/// ``cancel(_:attempt:)`` and ``shutdown(handBack:timeout:)``, reads ``held`` when it re-registers, and
/// forwards the ``AttemptEvent``s it receives (through an inproc socket to its socket thread).
///
/// Per attempt, the sink receives `started` when it begins executing, any `progress`, then exactly one
/// `finished` — also for an attempt cancelled before it started (no `started` then). An attempt is
/// ``held`` from ``run(_:)`` until its `finished` event has been delivered.
///
/// The first command spawned makes the process a child subreaper (`PR_SET_CHILD_SUBREAPER`), so that
/// orphaned members of an operation's process group can be reaped by the worker.
// @unchecked Sendable: `attempts`, `isShuttingDown`, `watchdog`, `window` and `monitor` are guarded by `condition` (the
// runner's one lock); `queue` is Foundation's thread-safe `OperationQueue`; the rest is immutable.
public final class AttemptRunner: @unchecked Sendable {
    /// Whether ``run(_:)`` took the attempt.
    public enum Admission: Sendable, Hashable {
        /// Queued; it will be reported.
        case accepted
        /// This attempt is already held; the request is ignored (its first run will be reported).
        case alreadyHeld
        /// ``shutdown(handBack:timeout:)`` was called; nothing new is run or reported.
        case shuttingDown
    }

    /// How many attempts run at once (the queue's `maxConcurrentOperationCount`).
    public let slots: Int
    /// The worker's name, used in messages.
    public let worker: WorkerID
    /// The handlers this worker offers.
    public let handlers: HandlerRegistry

    private let queue = OperationQueue()
    private let sink: AttemptEventSink
    private let condition = NSCondition()
    private var attempts: [AttemptKey: AttemptOperation] = [:]
    private var isShuttingDown = false
    /// The attempts holding a slot (started, or about to be), until their `finished` is delivered.
    private var slotHolders: Set<AttemptKey> = []
    /// Attempts waiting for a slot, in arrival order (one that reported meanwhile is skipped).
    private var waiting: [AttemptOperation] = []
    /// Kills the commands' process groups when the worker's lease ends; set by ``WorkerAgent`` before it
    /// runs anything (nil: no lease, as in tests of the runner alone).
    public var leaseWatchdog: LeaseWatchdog? {
        get { condition.withLock { watchdog } }
        set { condition.withLock { watchdog = newValue } }
    }
    private var watchdog: LeaseWatchdog?
    /// Streams commands' output through this window when set (by ``WorkerAgent``); nil: only the tails
    /// travel, with the `finished` event.
    public var outputWindow: OutputWindow? {
        get { condition.withLock { window } }
        set { condition.withLock { window = newValue } }
    }
    private var window: OutputWindow?
    /// Drains and reaps the commands' processes when set (by ``WorkerAgent``: its socket thread services
    /// it); nil: ``ChildMonitor/shared``, which has a thread of its own.
    var childMonitor: ChildMonitor? {
        get { condition.withLock { monitor } }
        set { condition.withLock { monitor = newValue } }
    }
    private var monitor: ChildMonitor?

    /// Creates a runner with `slots` concurrent attempts delivering its events to `events`, which must
    /// be thread-safe, must not block and must not call the runner (a `finished` is delivered under the
    /// runner's lock).
    public init(slots: Int, worker: WorkerID, handlers: HandlerRegistry = .withBuiltins(), events: @escaping AttemptEventSink) {
        precondition(slots > 0, "a worker needs at least one slot, got \(slots)")
        self.slots = slots
        self.worker = worker
        self.handlers = handlers
        self.sink = events
        queue.name = "opq-worker \(worker)"
        queue.maxConcurrentOperationCount = slots
    }

    /// Queues one attempt and returns at once.
    @discardableResult
    public func run(_ request: RunRequest) -> Admission {
        let operation = makeOperation(request)
        operation.name = request.name
        if let timeout = request.timeout, timeout > 0 { operation.timeout = timeout }
        operation.sink = { [weak self] event in self?.deliver(event) ?? () }
        let (admission, startsNow): (Admission, Bool) = condition.withLock {
            if isShuttingDown { return (.shuttingDown, false) }
            if attempts[request.key] != nil { return (.alreadyHeld, false) }
            attempts[request.key] = operation
            guard slotHolders.count < slots else {
                waiting.append(operation)
                return (.accepted, false)
            }
            slotHolders.insert(request.key)
            return (.accepted, true)
        }
        if startsNow { launch(operation) }
        return admission
    }

    /// Starts an attempt that holds a slot: on this thread when its start never blocks, else on the queue.
    /// Never called with `condition` held (the start may deliver the attempt's `finished` at once).
    private func launch(_ operation: AttemptOperation) {
        if Self.startsWithoutBlocking(operation) {
            operation.start()
        } else {
            queue.addOperation(operation)
        }
    }

    /// True for the operations whose `start()` returns at once: a command, an empty or failed attempt, a
    /// ``HandlerOperation`` (its `begin()` is final and hands blocking work to a thread of its own) — and
    /// that wait for no Foundation dependency (a handler may add one; the queue waits for it).
    static func startsWithoutBlocking(_ operation: AttemptOperation) -> Bool {
        (operation is CommandOperation || operation is HandlerOperation || operation is FailedOperation
            || type(of: operation) == AttemptOperation.self) && operation.dependencies.isEmpty
    }

    /// Cancels a held attempt (SIGTERM/SIGKILL for commands, `isCancelled` for handlers); returns false
    /// if it is not held (unknown, or already reported).
    @discardableResult
    public func cancel(_ operation: OperationID, attempt: Int) -> Bool {
        stop(operation, attempt: attempt, cause: .cancel)
    }

    /// Stops a held attempt for `cause`: `.cancel` reports it `cancelled`, `.timeout` reports it
    /// `failed`/`timeout` (the coordinator's timeout kill), `.handBack` reports it handed back. Returns
    /// false if it is not held. The first cause given to an attempt wins.
    @discardableResult
    public func stop(_ operation: OperationID, attempt: Int, cause: StopCause) -> Bool {
        // An attempt that reported its end stays in `attempts` until the report is delivered (so a
        // re-registration always counts it somewhere); it is no longer held for a stop.
        guard let held = condition.withLock({ attempts[AttemptKey(operation, attempt: attempt)] }), !held.hasReported else {
            return false
        }
        held.stop(cause)
        return true
    }

    /// The attempts queued or running and not yet reported, in order: what a reconnecting worker tells
    /// the coordinator it still holds.
    public var held: [AttemptKey] { condition.withLock { attempts.keys.sorted() } }

    /// Stops taking attempts and winds down; safe to call more than once.
    ///
    /// - `handBack: false`: attempts that have not started are handed back at once; running ones finish.
    /// - `handBack: true`: every attempt is stopped (commands killed) and handed back.
    ///
    /// Handed-back attempts are reported with `handedBack = true`. Blocks until every held attempt is
    /// reported or `timeout` seconds pass; returns whether all were.
    @discardableResult
    public func shutdown(handBack: Bool, timeout: Double? = nil) -> Bool {
        let operations = condition.withLock {
            isShuttingDown = true
            return Array(attempts.values)
        }
        for operation in operations {
            if handBack {
                operation.stop(.handBack)
            } else {
                _ = operation.stop(.handBack, onlyIfWaiting: true)
            }
        }
        return waitUntilIdle(timeout: timeout ?? 1e9)
    }

    /// Waits up to `timeout` seconds until no attempt is held (every one reported); returns whether none is.
    public func waitUntilIdle(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return condition.withLock {
            while !attempts.isEmpty {
                if !condition.wait(until: deadline) { return attempts.isEmpty }
            }
            return true
        }
    }

    /// Passes `event` on. An attempt's `finished` is passed on and the attempt dropped in one step under
    /// `condition`, so ``held`` (and ``stop(_:attempt:cause:)``) never sees an attempt whose end was
    /// delivered, and a re-registration that reads ``held`` before taking the delivered events counts it
    /// exactly once. (The sink must therefore not call back into the runner.)
    ///
    /// The slot of an attempt that held one goes to the first attempt waiting for it, started on this
    /// thread once the lock is released.
    private func deliver(_ event: AttemptEvent) {
        guard case .finished(let completion) = event else { return sink(event) }
        let next: AttemptOperation? = condition.withLock {
            sink(event)
            attempts[completion.key] = nil
            condition.broadcast()
            guard slotHolders.remove(completion.key) != nil else { return nil }  // reported while waiting
            while !waiting.isEmpty {
                let candidate = waiting.removeFirst()
                guard attempts[candidate.key] === candidate else { continue }  // reported while waiting
                slotHolders.insert(candidate.key)
                return candidate
            }
            return nil
        }
        if let next { launch(next) }
    }

    private func makeOperation(_ request: RunRequest) -> AttemptOperation {
        switch request.work {
        case .empty:
            return AttemptOperation(key: request.key)
        case .command(let command):
            let operation = CommandOperation(key: request.key, commands: [command], qualityOfService: request.qualityOfService,
                                             killGracePeriod: request.killGracePeriod)
            operation.leaseWatchdog = leaseWatchdog
            operation.outputWindow = outputWindow
            operation.childMonitor = childMonitor
            return operation
        case .commands(let commands):
            let operation = CommandOperation(key: request.key, commands: commands, qualityOfService: request.qualityOfService,
                                             killGracePeriod: request.killGracePeriod)
            operation.leaseWatchdog = leaseWatchdog
            operation.outputWindow = outputWindow
            operation.childMonitor = childMonitor
            return operation
        case .handler(let name, let payload):
            let context = HandlerContext(key: request.key, operationName: request.name, queueName: request.queue,
                                         handler: name, payload: payload, qualityOfService: request.qualityOfService,
                                         dependencies: request.dependencies)
            guard let factory = handlers.factory(for: name) else {
                let known = handlers.names.joined(separator: ", ")
                return FailedOperation(key: request.key, .error(
                    "no handler '\(name)' registered on worker \(worker) (it has: \(known.isEmpty ? "none" : known))"))
            }
            do {
                let operation = try factory(context)
                guard let attempt = operation as? AttemptOperation else {
                    let adapter = ForeignOperationAdapter(key: request.key, wrapping: operation, context: context)
                    context.progressChannel.connect(adapter)
                    return adapter
                }
                guard attempt.key == request.key else {
                    return FailedOperation(key: request.key, .error("handler '\(name)' made an operation for \(attempt.key), not \(request.key)"))
                }
                context.progressChannel.connect(attempt)
                return attempt
            } catch {
                return FailedOperation(key: request.key, .error("handler '\(name)' rejected its payload: \(error)"))
            }
        case .handlers(let calls):
            // Each block is made as the handler operation it would be alone (HandlerCallsOperation).
            let blocks = calls.map { call in
                var single = request
                single.work = .handler(name: call.name, payload: call.payload)
                return makeOperation(single)
            }
            return HandlerCallsOperation(key: request.key, operationName: request.name, calls: calls, blocks: blocks)
        }
    }
}

/// An attempt that fails as soon as it starts, with a result decided beforehand (unknown handler, bad payload).
// @unchecked Sendable: restated as every `Operation` subclass must; its own state is one immutable `let`.
final class FailedOperation: AttemptOperation, @unchecked Sendable {
    private let result: AttemptResult

    init(key: AttemptKey, _ result: AttemptResult) {
        self.result = result
        super.init(key: key)
    }

    override func begin() { finish(result) }
}
