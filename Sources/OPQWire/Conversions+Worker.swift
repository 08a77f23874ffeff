import OPQCore

// Worker traffic: held attempts, dispatches, kills, finish reports and their output tails.

extension Opq_V1_AttemptRef {
    /// The wire form of an attempt.
    public init(_ operation: OperationID, attempt: Int) {
        self.init()
        self.operation = operation.rawValue
        self.attempt = UInt32(clamping: attempt)
    }

    /// The wire form of a held attempt.
    public init(_ held: Scheduler.HeldAttempt) { self.init(held.operation, attempt: held.attempt) }

    /// The operation's id.
    public var operationID: OperationID { OperationID(operation) }

    /// The core held attempt.
    public var held: Scheduler.HeldAttempt { Scheduler.HeldAttempt(OperationID(operation), attempt: Int(attempt)) }
}

extension Opq_V1_Register {
    /// The queues the worker serves: nil = every queue (`Scheduler.workerJoined`'s `queues`).
    public var queueSet: Set<String>? {
        get { hasQueueFilter ? Set(queueFilter.queues) : nil }
        set {
            if let queues = newValue { queueFilter = .with { $0.queues = queues.sorted() } } else { clearQueueFilter() }
        }
    }

    /// The attempts the worker still holds (`Scheduler.workerJoined`'s `holding`).
    public var heldAttempts: [Scheduler.HeldAttempt] { held.map(\.held) }

    /// The CPUs the worker offers (`Scheduler.workerJoined`'s `cpus`): nil = as many as its slots.
    public var announcedCpus: Int? {
        get { cpus == 0 ? nil : Int(cpus) }
        set { cpus = newValue.map { UInt32(clamping: $0) } ?? 0 }
    }

    /// The bytes of memory the worker offers (`Scheduler.workerJoined`'s `memory`): nil = not announced.
    public var announcedMemory: Int? {
        get { hasMemoryBytes ? Int(clamping: memoryBytes) : nil }
        set { if let bytes = newValue { memoryBytes = UInt64(clamping: bytes) } else { clearMemoryBytes() } }
    }
}

extension Opq_V1_KillReason {
    /// The wire form of a core kill reason.
    public init(_ reason: KillReason) {
        switch reason {
        case .cancel: self = .cancel
        case .timeout: self = .timeout
        case .stale: self = .stale
        }
    }

    /// The core kill reason; nil for `unspecified` or an unrecognized value.
    public var core: KillReason? {
        switch self {
        case .cancel: .cancel
        case .timeout: .timeout
        case .stale: .stale
        case .unspecified, .UNRECOGNIZED: nil
        }
    }
}

extension Opq_V1_Dispatch {
    /// A dispatch of attempt `attempt` of the operation `operation` describes (`Effect.dispatch`).
    public init(_ operation: Scheduler.OperationSnapshot, attempt: Int, killGrace: Double) {
        self.init(operation.id, attempt: attempt, details: Scheduler.DispatchDetails(
            name: operation.name, job: operation.job, queue: operation.queue, work: operation.work,
            qualityOfService: operation.qualityOfService, timeout: operation.timeout), killGrace: killGrace)
    }

}

extension Opq_V1_Kill {
    /// An order to stop attempt `attempt` of `operation` (`Effect.kill`); `grace` 0 = the dispatch's.
    public init(_ operation: OperationID, attempt: Int, reason: KillReason, grace: Double = 0) {
        self.init()
        self.operation = operation.rawValue
        self.attempt = UInt32(clamping: attempt)
        self.reason = Opq_V1_KillReason(reason)
        graceSeconds = grace
    }
}

extension Opq_V1_AttemptStatus {
    /// The wire form of a core attempt status.
    public init(_ status: AttemptReport.Status) {
        switch status {
        case .succeeded: self = .succeeded
        case .failed: self = .failed
        case .cancelled: self = .cancelled
        }
    }

    /// The core status; nil for `unspecified` or an unrecognized value.
    public var core: AttemptReport.Status? {
        switch self {
        case .succeeded: .succeeded
        case .failed: .failed
        case .cancelled: .cancelled
        case .unspecified, .UNRECOGNIZED: nil
        }
    }
}

extension Opq_V1_Finished {
    /// A finish report of attempt `attempt` of `operation`. Attach output with `attachOutput`.
    public init(_ operation: OperationID, attempt: Int, report: AttemptReport, duration: Double) {
        self.init()
        self.operation = operation.rawValue
        self.attempt = UInt32(clamping: attempt)
        status = Opq_V1_AttemptStatus(report.status)
        reason = Opq_V1_FinishReason(report.reason)
        if let code = report.exitCode { exitCode = code }
        if let signal = report.signal { self.signal = signal }
        durationSeconds = duration
    }

    /// The core report (`Scheduler.finished`). A validated message always has a status; a missing one
    /// reads as a failure with reason `error`.
    public var report: AttemptReport {
        AttemptReport(status.core ?? .failed, reason: status.core == nil ? .error : reason.core,
                      exitCode: hasExitCode ? exitCode : nil, signal: hasSignal ? signal : nil)
    }

    /// The operation's id.
    public var operationID: OperationID { OperationID(operation) }

    /// Appends the captured tails as raw frames of the message being built and references them.
    /// `stdoutTotal`/`stderrTotal` are the bytes each stream produced (≥ the tail's length).
    public mutating func attachOutput(stdout: [UInt8], stdoutTotal: Int? = nil, stderr: [UInt8], stderrTotal: Int? = nil,
                                      to raw: inout [[UInt8]]) {
        self.stdout = Opq_V1_OutputTail.attach(stdout, total: stdoutTotal, to: &raw)
        self.stderr = Opq_V1_OutputTail.attach(stderr, total: stderrTotal, to: &raw)
    }
}

/// Output tails travel as raw frames after the message; the tail message holds the frame's index.
extension Opq_V1_OutputTail {
    /// Appends `bytes` as a raw frame (unless empty) and returns the reference to it.
    public static func attach(_ bytes: [UInt8], total: Int? = nil, to raw: inout [[UInt8]]) -> Opq_V1_OutputTail {
        .with {
            if !bytes.isEmpty {
                raw.append(bytes)
                $0.frame = UInt32(raw.count)
            }
            $0.totalBytes = UInt64(max(total ?? bytes.count, bytes.count))
        }
    }

    /// The tail's bytes among the message's raw frames (empty when none is referenced).
    public func bytes(in raw: [[UInt8]]) -> [UInt8] {
        frame >= 1 && Int(frame) <= raw.count ? raw[Int(frame) - 1] : []
    }

    /// True when the stream produced more than the tail keeps.
    public func isTruncated(in raw: [[UInt8]]) -> Bool { totalBytes > UInt64(bytes(in: raw).count) }
}

extension Opq_V1_Dispatch {
    /// The order for an `Effect.dispatch`, from the core's hot-path details.
    public init(_ operation: OperationID, attempt: Int, details: Scheduler.DispatchDetails, killGrace: Double) {
        self.init()
        self.operation = operation.rawValue
        self.attempt = UInt32(clamping: attempt)
        name = details.name
        job = details.job.rawValue
        queue = details.queue
        work = Opq_V1_Work(details.work)
        qos = Opq_V1_QualityOfService(details.qualityOfService)
        if let timeout = details.timeout { timeoutSeconds = timeout }
        killGraceSeconds = killGrace
    }
}
