import OPQCore
import OPQWire

/// One event of a coordinator's event stream, as ``RemoteCoordinator/events()`` and
/// ``RemoteOperation/events`` deliver it.
public enum RemoteEvent: Sendable, Hashable {
    /// An operation entered a new state (SEMANTICS §2).
    case stateChanged(StateChange)
    /// A handler reported progress: `fraction` in 0…1 (nil = unknown) and a free-text message.
    case progress(OperationID, fraction: Double?, message: String)
    /// Every operation of a job has finished.
    case jobFinished(JobID)

    /// One state transition of one operation.
    public struct StateChange: Sendable, Hashable {
        /// The coordinator's global event number.
        public var sequence: UInt64
        /// The operation.
        public var operation: OperationID
        /// Its job (submission batch).
        public var job: JobID
        /// The state it entered.
        public var state: OperationState
        /// The attempt (0 = never dispatched).
        public var attempt: Int
        /// The worker holding the attempt, when one did.
        public var worker: String?
        /// For `finished`: how it ended.
        public var outcome: Outcome?
        /// For `finished` (and a retry's `pending`): why.
        public var reason: FinishReason?
        /// A command's exit status, when it exited.
        public var exitCode: Int32?
        /// The signal that ended a command, when one did.
        public var signal: Int32?
        /// When it happened (seconds since the Unix epoch, coordinator's clock).
        public var time: Double
        /// Foundation's `isCancelled`: a cancel (by any client) of a dispatched or executing operation
        /// comes as an event of its unchanged state with this set, before the finish.
        public var isCancelled: Bool
        /// For a `finished` that the worker's report ended: bytes the command wrote to stdout and to stderr
        /// in all (nil = not known: read the output to see).
        public var stdoutBytes: UInt64?
        public var stderrBytes: UInt64?

        /// A state change with these fields (e.g. one a client infers from a snapshot).
        public init(sequence: UInt64 = 0, operation: OperationID, job: JobID, state: OperationState, attempt: Int = 0,
                    worker: String? = nil, outcome: Outcome? = nil, reason: FinishReason? = nil, exitCode: Int32? = nil,
                    signal: Int32? = nil, time: Double = 0, isCancelled: Bool = false) {
            self.sequence = sequence
            self.operation = operation
            self.job = job
            self.state = state
            self.attempt = attempt
            self.worker = worker
            self.outcome = outcome
            self.reason = reason
            self.exitCode = exitCode
            self.signal = signal
            self.time = time
            self.isCancelled = isCancelled
        }

        init?(sequence: UInt64, _ event: Opq_V1_OperationEvent) {
            guard let state = event.coreState else { return nil }
            self.sequence = sequence
            operation = event.operationID
            job = event.jobID
            self.state = state
            attempt = Int(event.attempt)
            worker = event.worker.isEmpty ? nil : event.worker
            outcome = event.outcome.core
            reason = event.reason.core
            exitCode = event.hasExitCode ? event.exitCode : nil
            signal = event.hasSignal ? event.signal : nil
            time = event.time
            isCancelled = event.cancelled
            stdoutBytes = event.hasStdoutBytes ? event.stdoutBytes : nil
            stderrBytes = event.hasStderrBytes ? event.stderrBytes : nil
        }
    }

    /// The operation the event is about (nil for ``jobFinished(_:)``).
    public var operation: OperationID? {
        switch self {
        case .stateChanged(let change): change.operation
        case .progress(let id, _, _): id
        case .jobFinished: nil
        }
    }

    /// The wire event as a `RemoteEvent`; nil for one that carries nothing usable.
    init?(_ event: Opq_V1_Event) {
        switch event.kind {
        case .operation(let change):
            guard let change = StateChange(sequence: event.sequence, change) else { return nil }
            self = .stateChanged(change)
        case .progress(let progress):
            self = .progress(OperationID(progress.operation), fraction: progress.hasFraction ? progress.fraction : nil,
                             message: progress.message)
        case .jobFinished(let job):
            self = .jobFinished(JobID(job))
        case nil:
            return nil
        }
    }
}
