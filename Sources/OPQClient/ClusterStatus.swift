import OPQCore
import OPQWire

/// What a coordinator answered to an accepted submission.
public struct JobReceipt: Sendable, Hashable {
    /// The new job's id.
    public var job: JobID
    /// The operations' ids, in submission order.
    public var operations: [OperationID]
    /// The idempotency key was seen before: this is the first acceptance's receipt.
    public var isDuplicate: Bool
    /// Where the coordinator's event stream stood once the submission was accepted (its own events
    /// included); nil when not known (a duplicate's receipt, an older coordinator).
    /// ``CoordinatorClient/watch(_:includeOutput:eventDelay:after:)`` resumes from there: the job's events
    /// from its submission on, without a snapshot of its operations.
    public var streamPosition: StreamPosition?

    /// A point in a coordinator's event stream.
    public struct StreamPosition: Sendable, Hashable {
        /// The last event numbered at that point.
        public var sequence: UInt64
        /// The coordinator instance that numbered it (another instance numbers its events afresh).
        public var instance: String
    }

    init(_ wire: Opq_V1_SubmitAccepted) {
        job = wire.jobID
        operations = wire.operationIDs
        isDuplicate = wire.duplicate
        streamPosition = wire.eventSequence > 0 && !wire.instance.isEmpty
            ? StreamPosition(sequence: wire.eventSequence, instance: wire.instance) : nil
    }
}

/// A job (one submission batch) as the coordinator reports it.
public struct JobStatus: Sendable, Hashable {
    /// Its id.
    public var id: JobID
    /// Its operations' ids, in batch order, barriers included.
    public var operationIDs: [OperationID]
    /// Counts by state and outcome, barriers excluded.
    public var counts: OperationCounts
    /// Every operation (barriers included) has finished.
    public var isFinished: Bool
    /// Every operation's status, in batch order, when asked for (``CoordinatorClient/job(_:includeOperations:)``).
    public var operations: [OperationStatus]
    /// The end-of-run report, when asked for (``CoordinatorClient/jobSummary(_:slowest:)``) and the coordinator
    /// makes one.
    public var summary: Summary?

    /// A job's end-of-run report, counted by the coordinator over every operation (barriers included).
    public struct Summary: Sendable, Hashable {
        /// Its operations, all of them.
        public var operations: Int
        public var succeeded: Int
        /// Of the succeeded: not run, their outputs were up to date.
        public var upToDate: Int
        public var failed: Int
        public var cancelled: Int
        public var unfinished: Int
        /// The finished operations that ran longest, longest first (ties in batch order).
        public var slowest: [OperationStatus]
        /// Every finished operation that did not succeed, in batch order.
        public var unsucceeded: [OperationStatus]

        init(_ wire: Opq_V1_JobSummary) {
            operations = Int(clamping: wire.operations)
            succeeded = Int(clamping: wire.succeeded)
            upToDate = Int(clamping: wire.upToDate)
            failed = Int(clamping: wire.failed)
            cancelled = Int(clamping: wire.cancelled)
            unfinished = Int(clamping: wire.unfinished)
            slowest = wire.slowest.map { OperationStatus($0) }
            unsucceeded = wire.unsucceeded.map { OperationStatus($0) }
        }
    }

    init(_ wire: Opq_V1_JobInfo) {
        id = wire.jobID
        operationIDs = wire.operations.map(OperationID.init)
        counts = wire.counts.core
        isFinished = wire.finished
        operations = wire.details.map { OperationStatus($0) }
        summary = wire.hasSummary ? Summary(wire.summary) : nil
    }
}

/// A live worker as the coordinator reports it (`opq workers`).
public struct WorkerStatus: Sendable, Hashable {
    /// Its unique name.
    public var name: String
    /// Its slots (local `maxConcurrentOperationCount`).
    public var slots: Int
    /// The cpus it offers to operations' `cpus:`.
    public var cpus: Int
    /// The memory it offers to operations' `memory:`, in bytes; nil = it announced none (not checked).
    public var memoryBytes: Int64?
    /// The operations it holds (dispatched or executing).
    public var operations: [OperationID]
    /// The queues it serves; nil = every queue.
    public var queues: [String]?
    /// The placement labels it offers.
    public var labels: [String: String]
    /// When the coordinator last heard from it (Unix seconds).
    public var lastSeen: Double
    /// The handler names it registered.
    public var handlers: [String]
    /// Its host name.
    public var host: String
    /// Its process id.
    public var pid: Int

    init(_ wire: Opq_V1_WorkerInfo) {
        name = wire.name
        slots = Int(wire.slots)
        cpus = Int(wire.cpus)
        memoryBytes = wire.hasMemoryBytes ? Int64(clamping: wire.memoryBytes) : nil
        operations = wire.operations.map(OperationID.init)
        queues = wire.hasQueueFilter ? wire.queueFilter.queues : nil
        labels = wire.labels
        lastSeen = wire.lastSeen
        handlers = wire.handlers
        host = wire.host
        pid = Int(wire.pid)
    }
}

/// What `prune` forgot.
public struct PruneResult: Sendable, Hashable {
    /// The jobs pruned.
    public var jobs: [JobID]
    /// How many operations they held.
    public var operations: Int
}

/// Which operations a cancel request names.
public enum CancelTarget: Sendable, Hashable {
    /// One operation.
    case operation(OperationID)
    /// Every unfinished operation of a job.
    case job(JobID)
    /// `cancelAllOperations` on a queue.
    case queue(String)
    /// Every unfinished operation of every queue.
    case all
}

/// Which operations ``CoordinatorClient/operations(_:)`` lists; the filters combine with AND.
public struct OperationFilter: Sendable, Hashable {
    /// Only this queue's operations.
    public var queue: String?
    /// Only operations in these states (empty = every state).
    public var states: [OperationState]
    /// Only this job's operations.
    public var job: JobID?

    /// A filter; no argument = every operation.
    public init(queue: String? = nil, states: [OperationState] = [], job: JobID? = nil) {
        self.queue = queue
        self.states = states
        self.job = job
    }
}
