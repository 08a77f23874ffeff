import OPQCore

// What the coordinator tells clients: events and snapshots of operations, queues, jobs and workers.
//
// These go core → wire only: OPQCore's snapshot and event types have no public initializers (they are
// made by the scheduler), so clients read the wire messages, with the typed accessors below.

extension Opq_V1_OperationEvent {
    /// The wire form of a core event (`Effect.notify`).
    public init(_ event: OperationEvent) {
        self.init()
        operation = event.operation.rawValue
        job = event.job.rawValue
        state = Opq_V1_OperationState(event.state)
        attempt = UInt32(clamping: event.attempt)
        worker = event.worker?.name ?? ""
        outcome = Opq_V1_Outcome(event.outcome)
        reason = Opq_V1_FinishReason(event.reason)
        if let code = event.exitCode { exitCode = code }
        if let signal = event.signal { self.signal = signal }
        if let retryAt = event.retryAt { self.retryAt = retryAt }
        time = event.time
        cancelled = event.isCancelled
    }

    /// The operation's id.
    public var operationID: OperationID { OperationID(operation) }
    /// The job's id.
    public var jobID: JobID { JobID(job) }
    /// The state entered (nil only for an unvalidated message).
    public var coreState: OperationState? { OperationState(state) }
    /// The worker, when one held the attempt.
    public var workerID: WorkerID? { worker.isEmpty ? nil : WorkerID(worker) }
}

extension Opq_V1_OperationInfo {
    /// The wire form of a core operation snapshot. The coordinator adds what the core does not keep
    /// (exit code, duration, progress, output tails) from the last finish report.
    public init(_ snapshot: Scheduler.OperationSnapshot) {
        self.init()
        id = snapshot.id.rawValue
        name = snapshot.name
        job = snapshot.job.rawValue
        queue = snapshot.queue
        if !snapshot.work.isEmpty { work = Opq_V1_Work(snapshot.work) }
        state = Opq_V1_OperationState(snapshot.state)
        outcome = Opq_V1_Outcome(snapshot.outcome)
        reason = Opq_V1_FinishReason(snapshot.reason)
        cancelled = snapshot.isCancelled
        barrier = snapshot.isBarrier
        priority = snapshot.priority.wireValue
        qos = Opq_V1_QualityOfService(snapshot.qualityOfService)
        requires = Opq_V1_Requirement(snapshot.requires)
        attempt = UInt32(clamping: snapshot.attempt)
        worker = snapshot.worker?.name ?? ""
        dependencies = snapshot.dependencies.map(\.rawValue)
        labels = snapshot.labels
        if let timeout = snapshot.timeout { timeoutSeconds = timeout }
        retriesLeft = UInt32(clamping: snapshot.retriesLeft)
        cpus = UInt32(clamping: snapshot.resources.cpus)
        memoryBytes = UInt64(clamping: snapshot.resources.memory)
    }

    /// The operation's id.
    public var operationID: OperationID { OperationID(id) }
    /// The state (nil only for an unvalidated message).
    public var coreState: OperationState? { OperationState(state) }
    /// The priority level.
    public var queuePriority: QueuePriority { QueuePriority(wire: priority) }
    /// What it does.
    public var coreWork: Work { Work(work) }
}

extension Opq_V1_QueueInfo {
    /// The wire form of a core queue snapshot.
    public init(_ snapshot: Scheduler.QueueSnapshot) {
        self.init()
        name = snapshot.name
        maxConcurrent = Int32(clamping: snapshot.maxConcurrent)
        suspended = snapshot.isSuspended
        counts = Opq_V1_Counts(snapshot.counts)
        barriers = UInt64(snapshot.barriers)
        tooLarge = snapshot.tooLarge
    }

    /// Foundation's `operationCount`: unfinished operations, barriers excluded.
    public var operationCount: Int { counts.core.unfinished }
}

extension Opq_V1_JobInfo {
    /// The wire form of a core job snapshot (without operation details).
    public init(_ snapshot: Scheduler.JobSnapshot) {
        self.init()
        id = snapshot.id.rawValue
        operations = snapshot.operations.map(\.rawValue)
        counts = Opq_V1_Counts(snapshot.counts)
        finished = snapshot.isFinished
    }

    /// The job's id.
    public var jobID: JobID { JobID(id) }
}

extension Opq_V1_WorkerInfo {
    /// The wire form of a core worker snapshot; the coordinator adds handlers, host and pid from the
    /// worker's registration.
    public init(_ snapshot: Scheduler.WorkerSnapshot) {
        self.init()
        name = snapshot.id.name
        slots = Int32(clamping: snapshot.slots)
        operations = snapshot.operations.map(\.rawValue)
        if let queues = snapshot.queues { queueFilter = .with { $0.queues = queues.sorted() } }
        labels = snapshot.labels
        lastSeen = snapshot.lastSeen
        cpus = UInt32(clamping: snapshot.cpus)
        if let memory = snapshot.memory { memoryBytes = UInt64(clamping: memory) }
    }

    /// The queues it serves: nil = every queue.
    public var queueSet: Set<String>? { hasQueueFilter ? Set(queueFilter.queues) : nil }
}
