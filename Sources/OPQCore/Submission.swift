/// A reference to a dependency at submission time.
public enum DependencyReference: Hashable, Sendable, CustomStringConvertible {
    /// An operation of the same submission, by its `name`.
    case name(String)
    /// An operation accepted earlier, by its id (dependencies across jobs).
    case id(OperationID)

    public var description: String {
        switch self {
        case .name(let name): "'\(name)'"
        case .id(let id): "\(id)"
        }
    }
}

/// One operation as submitted.
public struct OperationSpec: Sendable {
    /// Unique within its submission; empty = unnamed (then it cannot be referred to by name).
    public var name: String
    /// The queue it belongs to; created on first use.
    public var queue: String
    /// What it does.
    public var work: Work
    /// Operations it depends on.
    public var dependencies: [DependencyReference]
    /// Dispatch order within its queue.
    public var priority: QueuePriority
    /// Niceness on the worker.
    public var qualityOfService: QualityOfService
    /// What it needs of its dependencies' outcomes.
    public var requires: Requirement
    /// How many more attempts after a failed one (≥ 0).
    public var retries: Int
    /// Seconds an attempt may execute before it is killed and fails; nil = no limit.
    public var timeout: Double?
    /// Placement: only workers carrying all these labels may run it.
    public var labels: [String: String]
    /// What it needs of the worker that runs it (default: 1 cpu, no memory); see ``Resources``.
    public var resources: Resources = .default
    /// A barrier (Foundation's `addBarrierBlock`): waits for everything earlier in its queue, holds everything later.
    public var isBarrier: Bool
    /// Operations accepted earlier that are to depend on this one, added atomically with the submission
    /// (a client's dependency on an operation it had not added yet). A cycle they close refuses the
    /// whole submission; one that is dispatched or finished by then gets no edge (as `addDependency`).
    public var dependants: [OperationID]
    /// The reservation this operation takes up (``Scheduler/reserve(_:at:)``), or nil: the operations
    /// waiting on the reservation then wait on this operation, atomically with the submission (a cycle
    /// that closes refuses the whole submission).
    public var reservation: OperationID?
    /// Cancelled before it was submitted (Foundation's `cancel()` before `addOperation`): it is accepted
    /// and finishes `cancelled` at once, without being dispatched.
    public var isCancelled = false

    /// Creates an operation spec with Foundation's defaults.
    public init(
        name: String = "",
        queue: String = "default",
        work: Work = .empty,
        dependencies: [DependencyReference] = [],
        priority: QueuePriority = .normal,
        qualityOfService: QualityOfService = .default,
        requires: Requirement = .any,
        retries: Int = 0,
        timeout: Double? = nil,
        labels: [String: String] = [:],
        isBarrier: Bool = false,
        dependants: [OperationID] = [],
        reservation: OperationID? = nil,
        isCancelled: Bool = false
    ) {
        self.name = name
        self.queue = queue
        self.work = work
        self.dependencies = dependencies
        self.priority = priority
        self.qualityOfService = qualityOfService
        self.requires = requires
        self.retries = retries
        self.timeout = timeout
        self.labels = labels
        self.isBarrier = isBarrier
        self.dependants = dependants
        self.reservation = reservation
        self.isCancelled = isCancelled
    }
}

/// Settings of a named queue; nil fields are left as they are.
public struct QueueSettings: Hashable, Sendable {
    /// `maxConcurrentOperationCount`: -1 = no limit, 0 = nothing starts, N > 0 = at most N dispatched or executing.
    public var maxConcurrent: Int?
    /// While true nothing of the queue is dispatched.
    public var isSuspended: Bool?

    /// Creates settings.
    public init(maxConcurrent: Int? = nil, isSuspended: Bool? = nil) {
        self.maxConcurrent = maxConcurrent
        self.isSuspended = isSuspended
    }
}

/// A submission: one atomic batch (a job file, `addOperations`). Accepted whole or not at all.
public struct Submission: Sendable {
    /// The operations, in file order (which is their FIFO order).
    public var operations: [OperationSpec]
    /// Queue settings applied atomically with the batch, before any of it is dispatched.
    public var queueSettings: [(queue: String, settings: QueueSettings)]
    /// The submitter's idempotency key (empty = none): a resubmission with the same key is answered with
    /// the first one's receipt. Carried in the core's `.submitted` record, so the journal keeps it.
    public var idempotencyKey = ""
    /// The request as the coordinator received it (its encoded bytes; empty when it was built in
    /// process). The journal stores these bytes as they came, not a re-encoding.
    public var received: [UInt8] = []

    /// Creates a submission.
    public init(_ operations: [OperationSpec], queueSettings: [(queue: String, settings: QueueSettings)] = []) {
        self.operations = operations
        self.queueSettings = queueSettings
    }
}

/// What an accepted submission was given.
public struct SubmissionReceipt: Hashable, Sendable {
    /// The job: this batch.
    public var job: JobID
    /// Ids of the batch's operations, in batch order (contiguous).
    public var operations: [OperationID]

    /// Creates a receipt (the journal reads them back).
    public init(job: JobID, operations: [OperationID]) {
        self.job = job
        self.operations = operations
    }
}
