/// A state transition of one operation, as watchers see it (SEMANTICS §2).
///
/// Events of one operation are emitted in order. They are for watchers only: everything durable is a
/// ``JournalRecord`` of its own (``Effect/journal(_:)``), so a change of what an event says never changes
/// what the journal replays.
public struct OperationEvent: Hashable, Sendable {
    /// The operation.
    public var operation: OperationID
    /// Its job.
    public var job: JobID
    /// The state it entered.
    public var state: OperationState
    /// The attempt (1 = first dispatch; 0 = never dispatched yet).
    public var attempt: Int
    /// The worker holding the attempt, for `.dispatched`, `.executing` and a `.finished` that ran.
    public var worker: WorkerID?
    /// For `.finished`: how it ended.
    public var outcome: Outcome?
    /// For `.finished`, and for a `.pending`/`.ready` that follows a failed or lost attempt: why.
    public var reason: FinishReason?
    /// A command's exit status, when the attempt reported one.
    public var exitCode: Int32?
    /// The signal that ended a command, when one did.
    public var signal: Int32?
    /// For `.pending` after a failed attempt: when the retry becomes ready.
    public var retryAt: Timestamp?
    /// When the transition happened (the time of the event that caused it).
    public var time: Timestamp
    /// Foundation's `isCancelled`. A cancel of a dispatched or executing operation is notified at once
    /// with its state unchanged and this set; the finish follows when the worker reports.
    public var isCancelled = false
}

/// Why the core asks a worker to stop an attempt.
public enum KillReason: UInt8, Sendable, CustomStringConvertible {
    /// A cancel request.
    case cancel
    /// The attempt exceeded the operation's timeout.
    case timeout
    /// The worker reported an attempt that is no longer its own (it was given to another worker).
    case stale

    public var description: String {
        switch self {
        case .cancel: "cancel"
        case .timeout: "timeout"
        case .stale: "stale"
        }
    }
}

/// A change the coordinator must make durable before acknowledging it or sending what follows from it
/// (SEMANTICS §10): the client requests the core accepted, and what the workers caused (attempts,
/// retries, requeues, finishes). The core is the only author of these records; the journal replays them
/// through ``Scheduler/replay(_:at:)``.
public enum JournalRecord: Sendable {
    /// A whole submission, with the ids it was given.
    case submitted(SubmissionReceipt, Submission)
    /// A cancel request for one operation, a job, or a queue (a snapshot of its unfinished operations).
    case cancelled([OperationID])
    /// A queue's settings after a change.
    case queueSettings(queue: String, maxConcurrent: Int, isSuspended: Bool)
    /// A priority change.
    case priority(OperationID, QueuePriority)
    /// A dependency added (`true`) or removed (`false`); `on` may be a reservation (a forward edge).
    case dependency(OperationID, on: OperationID, added: Bool)
    /// `count` reservations were handed out, the first being `first` (``Scheduler/reserve(_:at:)``).
    case reserved(first: OperationID, count: Int)
    /// A reconnecting worker took back a requeued attempt it was still running (no `.dispatched` event).
    case adopted(OperationID, attempt: Int, worker: WorkerID)
    /// Attempt `attempt` of the operation was given to `worker` (a dispatch).
    case attempt(OperationID, attempt: Int, worker: WorkerID)
    /// The operation's attempt failed and it waits for a retry (its backoff is not journaled: a replayed
    /// retry waits a fresh backoff).
    case retry(OperationID, reason: FinishReason)
    /// The operation's attempt went back to `ready` because its worker left or was lost.
    case requeue(OperationID)
    /// The operation finished, with the worker's report when a worker's report finished it.
    case finished(OperationID, Outcome, FinishReason, report: AttemptReport?)
}

/// What the core asks its shell to do. The core never performs I/O itself.
public enum Effect: Sendable {
    /// Send attempt `attempt` of `operation` to `worker` (which has a free slot for it), with everything
    /// the worker needs to run it (`details`): the shell sends it without asking the core again.
    case dispatch(OperationID, attempt: Int, worker: WorkerID, details: Scheduler.DispatchDetails)
    /// Tell `worker` to stop attempt `attempt` of `operation`.
    case kill(OperationID, attempt: Int, worker: WorkerID, reason: KillReason)
    /// Tell watchers about a transition.
    case notify(OperationEvent)
    /// Every operation of `job` has finished.
    case jobFinished(JobID)
    /// Make an accepted change durable (before any acknowledgement or dispatch of this turn goes out).
    case journal(JournalRecord)
}
