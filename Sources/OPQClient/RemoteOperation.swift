import Foundation
import OPQCore
import OPQWire

/// One operation run by a worker of a cluster: Foundation's `Operation`, across processes.
///
/// Create it with its work (a command, several commands, a handler and payload, several handler calls
/// — ``addExecutionBlock(handler:payload:)`` — or nothing), set its
/// attributes and dependencies, and add it to a ``RemoteOperationQueue``. From then on the coordinator
/// runs it, and its state (``isReady``, ``isExecuting``, ``isFinished``, ``outcome``…) follows the
/// coordinator's event stream.
///
/// ```swift
/// let queue = try RemoteOperationQueue(name: "build", endpoint: "ipc:///tmp/opq/clients")
/// let compile = RemoteOperation(command: ["make", "-C", "src"])
/// let test = RemoteOperation(command: ["make", "test"])
/// test.addDependency(compile)
/// test.completionBlock = { print("tests done") }
/// try queue.addOperations([compile, test], waitUntilFinished: true)
/// print(test.outcome == .succeeded, test.exitStatus ?? -1)
/// ```
///
/// Differences from `Operation`: work is described, not run in this process, so there is no `main()`;
/// an operation that was already added to a queue makes ``RemoteOperationQueue/addOperation(_:)`` throw
/// instead of aborting; requests that need the coordinator after the operation was added
/// (``addDependency(_:)``, ``removeDependency(_:)``) may throw its refusal (e.g. a cycle, naming its
/// members). ``isCancelled`` turns true at once when this program cancels; a cancel by another client
/// shows as soon as its event arrives (for a running operation, before it finishes). Misuse that makes
/// `Operation` abort or hang throws or returns at once instead (see ``waitUntilFinished()``).
///
/// Thread-safe: every property and method may be used from any thread.
// @unchecked Sendable: every mutable field is read and changed only under `condition`.
public final class RemoteOperation: @unchecked Sendable, CustomStringConvertible {
    /// Everything that goes into the submission; frozen once the operation was added to a queue.
    struct Definition {
        var name = ""
        var work: Work
        var priority = QueuePriority.normal
        var qualityOfService = OPQCore.QualityOfService.default
        var requires = Requirement.any
        var retries = 0
        var timeout: Double?
        var labels: [String: String] = [:]
        var isBarrier = false
    }

    /// Where the operation went once accepted.
    struct Placement {
        let id: OperationID
        let job: JobID
        let queue: String
        let coordinator: RemoteCoordinator
    }

    /// Guards everything below; waited on by ``waitUntilFinished()``.
    let condition = NSCondition()
    var definition: Definition
    var dependencyList: [RemoteOperation] = []
    /// True from the moment a queue claims the operation (before the coordinator accepts it).
    var isClaimed = false
    var placement: Placement?
    var status = Status()
    private var completion: (@Sendable () -> Void)?
    private var finishWaiters: [CheckedContinuation<Outcome, any Error>] = []
    var eventStreams: [Int: AsyncStream<RemoteEvent>.Continuation] = [:]
    var nextStream = 0
    /// The last error of a request this operation made on its own (a priority change, a cancel).
    private var failure: ClientError?
    /// The connection closed before the operation finished: waits end, the state stays as it was.
    private var connectionClosed = false

    /// An operation with `work` (``Work`` from `OPQCore`).
    public init(work: Work) { definition = Definition(work: work) }

    /// An empty operation: a join point that needs no worker (like an empty `BlockOperation`).
    public convenience init() { self.init(work: .empty) }

    /// A command: `argv` run as a child process on a worker, without a shell.
    public convenience init(command argv: [String], environment: [String: String] = [:], workingDirectory: String? = nil) {
        self.init(work: .command(Command(argv, environment: environment, workingDirectory: workingDirectory)))
    }

    /// Several commands run at once on one worker (`BlockOperation`'s execution blocks); it succeeds
    /// only if all of them do.
    public convenience init(commands: [[String]]) { self.init(work: .commands(commands.map { Command($0) })) }

    /// A handler registered on workers under `handler` (see `OPQWorker.Worker`), given `payload`.
    public convenience init(handler: String, payload: [UInt8] = []) {
        self.init(work: .handler(name: handler, payload: payload))
    }

    /// A handler given a UTF-8 text payload.
    public convenience init(handler: String, text: String) { self.init(handler: handler, payload: Array(text.utf8)) }

    // MARK: Attributes

    /// The operation's name (unique within one `addOperations` batch); set it before adding.
    public var name: String {
        get { condition.withLock { definition.name } }
        set { define { $0.name = newValue } }
    }

    /// What it does.
    public var work: Work { condition.withLock { definition.work } }

    /// Its place in its queue's dispatch order. Changing it after the operation was added asks the
    /// coordinator to move it (to the back of its new level); a refusal is kept in ``lastError``.
    public var queuePriority: QueuePriority {
        get { condition.withLock { definition.priority } }
        set {
            let placed: Placement? = condition.withLock {
                definition.priority = newValue
                return placement
            }
            guard let placed, read(\.state) != .finished else { return }
            placed.coordinator.sendAndForget(for: self) {
                $0.setPriority.operation = placed.id.rawValue
                $0.setPriority.priority = newValue.wireValue
            }
        }
    }

    /// How the worker runs its process (niceness); set it before adding.
    public var qualityOfService: OPQCore.QualityOfService {
        get { condition.withLock { definition.qualityOfService } }
        set { define { $0.qualityOfService = newValue } }
    }

    /// **beyond** What it needs of its dependencies' outcomes (`.success` = cancelled when one fails).
    public var requires: Requirement {
        get { condition.withLock { definition.requires } }
        set { define { $0.requires = newValue } }
    }

    /// **beyond** Further attempts after a failed one.
    public var retries: Int {
        get { condition.withLock { definition.retries } }
        set { define { $0.retries = newValue } }
    }

    /// **beyond** Seconds an attempt may execute before it is killed and fails; nil = no limit.
    public var timeout: Double? {
        get { condition.withLock { definition.timeout } }
        set { define { $0.timeout = newValue } }
    }

    /// **beyond** Placement: only workers carrying all these labels may run it.
    public var labels: [String: String] {
        get { condition.withLock { definition.labels } }
        set { define { $0.labels = newValue } }
    }

    /// Whether it is a barrier (made by ``RemoteOperationQueue/addBarrier(command:)``).
    public var isBarrier: Bool { condition.withLock { definition.isBarrier } }

    /// Changes the definition; ignored once the operation was added (the coordinator has its copy).
    private func define(_ change: (inout Definition) -> Void) {
        condition.withLock { if !isClaimed { change(&definition) } }
    }

    // MARK: Identity

    /// The coordinator's id, once the operation was added; nil before.
    public var id: OperationID? { condition.withLock { placement?.id } }
    /// The job (submission batch) it was accepted in.
    public var job: JobID? { condition.withLock { placement?.job } }
    /// The queue it was added to.
    public var queueName: String? { condition.withLock { placement?.queue } }

    public var description: String {
        condition.withLock {
            let label = definition.name.isEmpty ? "operation" : "operation '\(definition.name)'"
            return placement.map { "\(label) (\($0.id))" } ?? label
        }
    }

    /// The last error of a request the operation made without a caller to throw to (a priority change
    /// after it was added, a cancel); nil if none failed.
    public var lastError: ClientError? { condition.withLock { failure } }

    func record(_ error: ClientError) { condition.withLock { failure = error } }

    // MARK: Completion

    /// Called once after the operation has finished, whatever its outcome (also when it was cancelled),
    /// on a background thread. Set it before the operation finishes.
    public var completionBlock: (@Sendable () -> Void)? {
        get { condition.withLock { completion } }
        set { condition.withLock { completion = newValue } }
    }

    /// Called (outside the lock) when the first `finished` state was applied: wakes waiters, resumes
    /// `finished`, ends event streams, and runs the completion block once.
    func didFinish(outcome: Outcome) {
        let (block, waiters, streams): ((@Sendable () -> Void)?, [CheckedContinuation<Outcome, any Error>], [AsyncStream<RemoteEvent>.Continuation]) =
            condition.withLock {
                defer {
                    completion = nil
                    finishWaiters = []
                    eventStreams = [:]
                    condition.broadcast()
                }
                return (completion, finishWaiters, Array(eventStreams.values))
            }
        for waiter in waiters { waiter.resume(returning: outcome) }
        for stream in streams { stream.finish() }
        if let block { DispatchQueue.global().async(execute: block) }
    }

    /// The connection closed while the operation was unfinished: ends every wait (``finished`` throws
    /// `error`), and its event streams.
    func connectionDidClose(_ error: ClientError) {
        let (waiters, streams) = condition.withLock {
            defer {
                connectionClosed = true
                finishWaiters = []
                eventStreams = [:]
                condition.broadcast()
            }
            return (finishWaiters, Array(eventStreams.values))
        }
        for waiter in waiters { waiter.resume(throwing: error) }
        for stream in streams { stream.finish() }
    }

    // MARK: Waiting

    /// Blocks until the operation has finished (Foundation's `waitUntilFinished()`), or its
    /// coordinator connection was closed (then ``isFinished`` stays false).
    ///
    /// An operation never added to a queue would never finish, so for it this returns at once and
    /// ``isFinished`` stays false (Foundation would block forever; ``finished`` throws
    /// ``ClientError/notSubmitted(operation:)`` instead).
    public func waitUntilFinished() {
        condition.withLock { while isClaimed, status.state != .finished, !connectionClosed { condition.wait() } }
    }

    /// Blocks until the operation has finished or `seconds` pass; returns whether it finished. Returns
    /// false at once for an operation never added to a queue. Any timeout is safe: `.infinity` (or more
    /// than about 100 years) waits without a limit, zero, a negative one or NaN does not wait.
    @discardableResult
    public func waitUntilFinished(timeout seconds: Double) -> Bool {
        let deadline = WaitDeadline(seconds: seconds)
        return condition.withLock {
            while isClaimed, status.state != .finished, !connectionClosed {
                if !condition.wait(until: deadline) { break }
            }
            return status.state == .finished
        }
    }

    /// The outcome, once the operation has finished: `try await operation.finished`.
    ///
    /// Throws ``ClientError/notSubmitted(operation:)`` for an operation never added to a queue, and
    /// ``ClientError/closed(endpoint:)`` when the connection closes first.
    public var finished: Outcome {
        get async throws {
            guard condition.withLock({ isClaimed }) else { throw ClientError.notSubmitted(operation: description) }
            return try await withCheckedThrowingContinuation { continuation in
                let outcome: Result<Outcome, any Error>? = condition.withLock {
                    if status.state == .finished { return .success(status.outcome ?? .succeeded) }
                    if connectionClosed { return .failure(ClientError.closed(endpoint: placement?.coordinator.endpoint ?? "")) }
                    finishWaiters.append(continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        }
    }

    /// This operation's events (state changes and progress) from now until it finishes, as an
    /// `AsyncSequence`. For an operation that already finished the sequence is empty.
    public var events: AsyncStream<RemoteEvent> {
        AsyncStream(bufferingPolicy: .unbounded) { continuation in
            let done: Bool = condition.withLock {
                guard status.state != .finished, !connectionClosed else { return true }
                nextStream += 1
                let key = nextStream
                eventStreams[key] = continuation
                continuation.onTermination = { [weak self] _ in
                    guard let self else { return }
                    self.condition.withLock { _ = self.eventStreams.removeValue(forKey: key) }
                }
                return false
            }
            if done { continuation.finish() }
        }
    }
}

/// Like `Operation` (an `NSObject`), an operation is equal only to itself: two operations with the same
/// work are two operations.
extension RemoteOperation: Hashable {
    public static func == (lhs: RemoteOperation, rhs: RemoteOperation) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
