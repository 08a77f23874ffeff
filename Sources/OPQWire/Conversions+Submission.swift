import OPQCore

// Submissions: OperationSpec, QueueSettings, Submission, and the receipt of an accepted one.

extension Opq_V1_OperationSpec {
    /// The wire form of a core operation spec.
    public init(_ spec: OperationSpec) {
        self.init()
        name = spec.name
        queue = spec.queue
        if !spec.work.isEmpty { work = Opq_V1_Work(spec.work) }
        dependencies = spec.dependencies.map(Opq_V1_DependencyRef.init)
        priority = spec.priority.wireValue
        qos = Opq_V1_QualityOfService(spec.qualityOfService)
        requires = Opq_V1_Requirement(spec.requires)
        retries = UInt32(clamping: spec.retries)
        if let timeout = spec.timeout { timeoutSeconds = timeout }
        labels = spec.labels
        barrier = spec.isBarrier
        dependants = spec.dependants.map(\.rawValue)
        if spec.resources.cpus != 1 { cpus = UInt32(clamping: spec.resources.cpus) }
        memoryBytes = UInt64(clamping: spec.resources.memory)
        reservation = spec.reservation?.rawValue ?? 0
        cancelled = spec.isCancelled
    }
}

extension OperationSpec {
    /// The core spec of a (validated) wire spec: an empty queue is `default`, the priority is snapped.
    public init(_ wire: Opq_V1_OperationSpec) {
        self.init(wireName: wire.name, queue: wire.queue, work: Work(wire.work), dependencies: wire.dependencies.compactMap(\.core),
                  priority: wire.priority, qos: wire.qos, requires: wire.requires, retries: wire.retries,
                  timeout: wire.hasTimeoutSeconds ? wire.timeoutSeconds : nil, labels: wire.labels, barrier: wire.barrier,
                  dependants: wire.dependants, cpus: wire.cpus, memoryBytes: wire.memoryBytes, reservation: wire.reservation,
                  cancelled: wire.cancelled)
    }

    /// The core spec of a (validated) wire spec's fields, whoever read them (SwiftProtobuf's message or
    /// the hand-written Submit reader, `ClientRequest+SubmitReader.swift`): the one place their meaning is set.
    init(wireName name: String, queue: String, work: Work, dependencies: [DependencyReference], priority: Int32,
         qos: Opq_V1_QualityOfService, requires: Opq_V1_Requirement, retries: UInt32, timeout: Double?,
         labels: [String: String], barrier: Bool, dependants: [UInt64], cpus: UInt32, memoryBytes: UInt64,
         reservation: UInt64, cancelled: Bool) {
        self.init(
            name: name,
            queue: Opq_V1_QueueSettings.coreQueue(queue),
            work: work,
            dependencies: dependencies,
            priority: QueuePriority(wire: priority),
            qualityOfService: QualityOfService(qos),
            requires: Requirement(requires),
            retries: Int(retries),
            timeout: timeout,
            labels: labels,
            isBarrier: barrier,
            dependants: dependants.map(OperationID.init),
            reservation: reservation == 0 ? nil : OperationID(reservation),
            isCancelled: cancelled)
        resources = Resources(cpus: cpus == 0 ? 1 : Int(cpus), memory: Int(clamping: memoryBytes))
    }
}

extension Opq_V1_QueueSettings {
    /// The wire form of a queue's settings (nil fields stay absent). A `maxConcurrent` beyond the
    /// `int32` range is clamped; the coordinator refuses it either way.
    public init(queue: String, _ settings: QueueSettings) {
        self.init()
        self.queue = queue
        if let max = settings.maxConcurrent { maxConcurrent = Int32(clamping: max) }
        if let suspended = settings.isSuspended { self.suspended = suspended }
    }

    /// The queue name (empty = `default`) and its core settings.
    public var core: (queue: String, settings: QueueSettings) {
        Self.core(queue: queue, maxConcurrent: hasMaxConcurrent ? maxConcurrent : nil, suspended: hasSuspended ? suspended : nil)
    }

    /// The core queue name and settings of a queue's wire fields, whoever read them.
    static func core(queue: String, maxConcurrent: Int32?, suspended: Bool?) -> (queue: String, settings: QueueSettings) {
        (coreQueue(queue), QueueSettings(maxConcurrent: maxConcurrent.map(Int.init), isSuspended: suspended))
    }

    /// The core name of a wire queue name: empty = `default`.
    static func coreQueue(_ wire: String) -> String { wire.isEmpty ? "default" : wire }
}

extension Opq_V1_Submit {
    /// The wire form of a core submission, with an optional idempotency key.
    public init(_ submission: Submission, idempotencyKey: String = "") {
        self.init()
        operations = submission.operations.map(Opq_V1_OperationSpec.init)
        queueSettings = submission.queueSettings.map { Opq_V1_QueueSettings(queue: $0.queue, $0.settings) }
        self.idempotencyKey = idempotencyKey
    }
}

extension Submission {
    /// The core submission of a (validated) wire `Submit`; the idempotency key stays on the wire message.
    public init(_ wire: Opq_V1_Submit) {
        self.init(wire.operations.map(OperationSpec.init), queueSettings: wire.queueSettings.map(\.core))
    }
}

extension Opq_V1_SubmitAccepted {
    /// The wire form of an accepted submission's receipt; `eventSequence` and `instance` (the last event
    /// numbered once it was accepted, by which coordinator instance) when they are known.
    public init(_ receipt: SubmissionReceipt, duplicate: Bool = false, eventSequence: UInt64 = 0, instance: String = "") {
        self.init()
        job = receipt.job.rawValue
        operations = receipt.operations.map(\.rawValue)
        self.duplicate = duplicate
        self.eventSequence = eventSequence
        self.instance = instance
    }

    /// The job's id.
    public var jobID: JobID { JobID(job) }

    /// The operations' ids, in batch order.
    public var operationIDs: [OperationID] { operations.map(OperationID.init) }
}
