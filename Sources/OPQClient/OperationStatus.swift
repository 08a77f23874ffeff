import OPQCore
import OPQWire

/// Everything a coordinator knows about one operation, as ``CoordinatorClient`` reports it (`opq show`,
/// `opq list`, `opq status JOB`).
public struct OperationStatus: Sendable, Hashable {
    /// Its id.
    public var id: OperationID
    /// Its name (may be empty).
    public var name: String
    /// Its job (submission batch).
    public var job: JobID
    /// Its queue.
    public var queue: String
    /// What it runs.
    public var work: Work
    /// Its state (nil only from a coordinator that sent a state this client does not know).
    public var state: OperationState?
    /// How it ended, once finished.
    public var outcome: Outcome?
    /// Why it finished, or why its last attempt ended.
    public var reason: FinishReason?
    /// Foundation's `isCancelled`.
    public var isCancelled: Bool
    /// Whether it is a barrier.
    public var isBarrier: Bool
    /// Its priority in its queue.
    public var priority: QueuePriority
    /// How a worker runs it.
    public var qualityOfService: OPQCore.QualityOfService
    /// What it needs of its dependencies' outcomes.
    public var requires: Requirement
    /// The current attempt (0 = never dispatched).
    public var attempt: Int
    /// The worker holding the current attempt.
    public var worker: String?
    /// Its explicit dependencies, in the order they were added.
    public var dependencies: [OperationID]
    /// Placement labels.
    public var labels: [String: String]
    /// Seconds an attempt may run.
    public var timeout: Double?
    /// Further attempts it may still get.
    public var retriesLeft: Int
    /// A command's exit status, from the last finish report.
    public var exitCode: Int32?
    /// The signal that ended a command, from the last finish report.
    public var signal: Int32?
    /// Wall time of the last attempt.
    public var duration: Double?
    /// Why it has not started (pending or ready operations, ``CoordinatorClient/operation(_:includeOutput:)`` only).
    public var blockers: [Blocker]
    /// The worker that ran the attempt that finished it.
    public var finishedBy: String?
    /// When that attempt started (Unix seconds, coordinator's clock).
    public var startedAt: Double?
    /// When its report arrived (Unix seconds, coordinator's clock).
    public var endedAt: Double?
    /// The captured tail of stdout (with `includeOutput`).
    public var standardOutputTail: OutputTail?
    /// The captured tail of stderr (with `includeOutput`).
    public var standardErrorTail: OutputTail?
    /// The size of its handler's result in bytes, 0 = none (``CoordinatorClient/operation(_:includeOutput:includeStory:)``
    /// only; the bytes: ``CoordinatorClient/result(of:)``).
    public var resultBytes = 0

    /// Its story, oldest step first (with `includeStory`; nil when not asked for).
    public var story: Story?

    /// What happened to an operation, step by step, from the coordinator's event log (`opq show --story`).
    public struct Story: Sendable, Hashable {
        /// One transition: when, what, on which worker, and the message or timer that caused it.
        public struct Step: Sendable, Hashable {
            /// The event's number in the coordinator's log (the causal order).
            public var sequence: UInt64
            /// When (Unix seconds, the coordinator's clock); nil for progress reports.
            public var time: Double?
            /// `submitted`, `ready`, `dispatched`, `started`, `progress`, `retry`, `requeued`, `pending`,
            /// `succeeded`, `failed`, `cancelled`.
            public var event: String
            /// The attempt it belongs to (0 = before the first dispatch).
            public var attempt: Int
            /// The worker involved, if any.
            public var worker: String?
            /// The step in words, with its reason.
            public var text: String
            /// What caused it ("#42 worker report"); nil when unknown.
            public var cause: String?
        }

        /// The steps kept, oldest first.
        public var steps: [Step]
        /// Steps left out in the middle of a very long story (progress floods).
        public var omitted: Int
        /// False when the event log no longer holds the first steps.
        public var isComplete: Bool
    }

    /// One reason a pending or ready operation has not started, as the coordinator said it.
    public struct Blocker: Sendable, Hashable, CustomStringConvertible {
        /// What kind of reason.
        public enum Kind: String, Sendable, Hashable {
            /// ``Blocker/operations`` have not finished.
            case dependencies
            /// A failed attempt's backoff runs.
            case retryBackoff
            /// ``Blocker/queue`` is suspended.
            case queueSuspended
            /// ``Blocker/queue`` runs ``Blocker/limit`` operations (0 = holds everything).
            case queueAtLimit
            /// No live worker serves ``Blocker/queue`` with ``Blocker/labels``.
            case noWorker
            /// Eligible workers have no free slot: in line.
            case workersBusy
            /// No eligible worker has as many CPUs or as much memory as it needs.
            case tooLarge
            /// Eligible workers have not enough free now: in line.
            case resourcesBusy
            /// A kind this client does not know (a newer coordinator).
            case unknown
        }

        /// What kind of reason.
        public var kind: Kind
        /// The reason in words, as `opq show` prints it.
        public var text: String
        /// For ``Kind/dependencies``: the unfinished dependencies.
        public var operations: [OperationID]
        /// For the queue kinds: the queue.
        public var queue: String
        /// For ``Kind/queueAtLimit``: the limit.
        public var limit: Int
        /// For ``Kind/noWorker``: the labels no live worker offers.
        public var labels: [String: String]

        public var description: String { text }

        init(_ wire: Opq_V1_Blocker) {
            kind = switch wire.kind {
            case .dependencies: .dependencies
            case .retryBackoff: .retryBackoff
            case .queueSuspended: .queueSuspended
            case .queueAtLimit: .queueAtLimit
            case .noWorker: .noWorker
            case .workersBusy: .workersBusy
            case .tooLarge: .tooLarge
            case .resourcesBusy: .resourcesBusy
            case .unspecified, .UNRECOGNIZED: .unknown
            }
            text = wire.text
            operations = wire.operations.map(OperationID.init)
            queue = wire.queue
            limit = Int(wire.limit)
            labels = wire.labels
        }
    }

    /// The last bytes of one output stream that the coordinator keeps from the finish report.
    public struct OutputTail: Sendable, Hashable {
        /// The bytes kept (the end of the stream).
        public var bytes: [UInt8]
        /// Bytes the stream produced in all.
        public var totalBytes: UInt64
        /// True when the stream produced more than the tail keeps.
        public var isTruncated: Bool { totalBytes > UInt64(bytes.count) }
    }

    /// The tail of `stream`, when it was asked for.
    public func tail(_ stream: StandardStream) -> OutputTail? {
        stream == .standardOutput ? standardOutputTail : standardErrorTail
    }

    /// True once finished with outcome `succeeded`.
    public var succeeded: Bool { state == .finished && outcome == .succeeded }

    /// "name (op-N)", or "op-N" for an unnamed operation.
    public var label: String { name.isEmpty ? "op-\(id.rawValue)" : "\(name) (op-\(id.rawValue))" }

    init(_ info: Opq_V1_OperationInfo, raw: [[UInt8]] = []) {
        id = info.operationID
        name = info.name
        job = JobID(info.job)
        queue = info.queue
        work = info.coreWork
        state = info.coreState
        outcome = info.outcome.core
        reason = info.reason.core
        isCancelled = info.cancelled
        isBarrier = info.barrier
        priority = info.queuePriority
        qualityOfService = OPQCore.QualityOfService(info.qos)
        requires = Requirement(info.requires)
        attempt = Int(info.attempt)
        worker = info.worker.isEmpty ? nil : info.worker
        dependencies = info.dependencies.map(OperationID.init)
        labels = info.labels
        timeout = info.hasTimeoutSeconds ? info.timeoutSeconds : nil
        retriesLeft = Int(info.retriesLeft)
        exitCode = info.hasExitCode ? info.exitCode : nil
        signal = info.hasSignal ? info.signal : nil
        duration = info.hasDurationSeconds ? info.durationSeconds : nil
        blockers = info.blockers.map(Blocker.init)
        finishedBy = info.finishedBy.isEmpty ? nil : info.finishedBy
        startedAt = info.hasStartedAt ? info.startedAt : nil
        endedAt = info.hasEndedAt ? info.endedAt : nil
        if info.hasStdout { standardOutputTail = OutputTail(bytes: info.stdout.bytes(in: raw), totalBytes: info.stdout.totalBytes) }
        if info.hasStderr { standardErrorTail = OutputTail(bytes: info.stderr.bytes(in: raw), totalBytes: info.stderr.totalBytes) }
        resultBytes = Int(clamping: info.result.totalBytes)
        if !info.story.isEmpty || info.storyComplete {
            story = Story(
                steps: info.story.map {
                    Story.Step(sequence: $0.sequence, time: $0.hasTime ? $0.time : nil, event: $0.event, attempt: Int($0.attempt),
                               worker: $0.worker.isEmpty ? nil : $0.worker, text: $0.text, cause: $0.cause.isEmpty ? nil : $0.cause)
                },
                omitted: Int(info.storyOmitted), isComplete: info.storyComplete)
        }
    }
}

/// One of an operation's two output streams.
public enum StandardStream: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Its standard output.
    case standardOutput
    /// Its standard error.
    case standardError

    public var description: String { self == .standardOutput ? "stdout" : "stderr" }

    var wire: Opq_V1_OutputStream { self == .standardOutput ? .stdout : .stderr }
}
