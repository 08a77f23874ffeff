/// A state transition of one operation, as watchers see it (SEMANTICS §2).
///
/// Events of one operation are emitted in order. The coordinator journals the `.dispatched` and
/// `.finished` events (attempts and outcomes) besides the `.journal` records.
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

/// An accepted change the coordinator must make durable before acknowledging it (SEMANTICS §10).
public enum JournalRecord: Sendable {
    /// A whole submission, with the ids it was given.
    case submitted(SubmissionReceipt, Submission)
    /// A cancel request for one operation, a job, or a queue (a snapshot of its unfinished operations).
    case cancelled([OperationID])
    /// A queue's settings after a change.
    case queueSettings(queue: String, maxConcurrent: Int, isSuspended: Bool)
    /// A priority change.
    case priority(OperationID, QueuePriority)
    /// A dependency added (`true`) or removed (`false`).
    case dependency(OperationID, on: OperationID, added: Bool)
    /// A reconnecting worker took back a requeued attempt it was still running (no `.dispatched` event).
    case adopted(OperationID, attempt: Int, worker: WorkerID)
}

/// What the core asks its shell to do. The core never performs I/O itself.
public enum Effect: Sendable {
    /// Send attempt `attempt` of `operation` to `worker` (which has a free slot for it).
    case dispatch(OperationID, attempt: Int, worker: WorkerID)
    /// Tell `worker` to stop attempt `attempt` of `operation`.
    case kill(OperationID, attempt: Int, worker: WorkerID, reason: KillReason)
    /// Tell watchers about a transition.
    case notify(OperationEvent)
    /// Every operation of `job` has finished.
    case jobFinished(JobID)
    /// Make an accepted change durable (before any acknowledgement or dispatch of this turn goes out).
    case journal(JournalRecord)
}
