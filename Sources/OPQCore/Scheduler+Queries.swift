/// Read-only views: operations, queues, jobs, workers, counts and progress (SEMANTICS §8).
extension Scheduler {
    /// Everything known about one operation.
    public struct OperationSnapshot: Hashable, Sendable {
        public var id: OperationID
        public var name: String
        public var job: JobID
        public var queue: String
        public var work: Work
        public var state: OperationState
        public var outcome: Outcome?
        /// Why it finished, or why its last attempt ended.
        public var reason: FinishReason?
        public var isCancelled: Bool
        public var isBarrier: Bool
        public var priority: QueuePriority
        public var qualityOfService: QualityOfService
        public var requires: Requirement
        /// Current attempt (0 = never dispatched).
        public var attempt: Int
        /// Worker holding the current attempt.
        public var worker: WorkerID?
        /// Dependencies, explicit ones only, in the order they were added.
        public var dependencies: [OperationID]
        /// Placement labels.
        public var labels: [String: String]
        /// Attempt time limit in seconds.
        public var timeout: Double?
        /// Retries still allowed.
        public var retriesLeft: Int
        /// What it needs of the worker that runs it.
        public var resources: Resources = .default
    }

    /// The operation `id`, or nil if unknown.
    public func operation(_ id: OperationID) -> OperationSnapshot? {
        guard let index = index(of: id), !isPruned(index) else { return nil }
        let record = operations[index]
        return OperationSnapshot(
            id: id, name: record.name, job: JobID(index: Int(record.job)), queue: queues[Int(record.queue)].name,
            work: record.work, state: record.state, outcome: record.outcome, reason: record.reason,
            isCancelled: record.isCancelled, isBarrier: record.isBarrier, priority: record.priority,
            qualityOfService: record.qualityOfService, requires: record.requires, attempt: Int(record.attempt),
            worker: record.worker >= 0 ? workers[Int(record.worker)].id : nil,
            dependencies: explicitDependencies(of: record),
            labels: placements[Int(record.placement)], timeout: record.timeout > 0 ? record.timeout : nil,
            retriesLeft: Int(record.retriesLeft), resources: placementNeeds[Int(record.placement)])
    }

    /// The operations `id` was made to depend on (``OperationSnapshot/dependencies``), without building
    /// its whole snapshot: asked at every dispatch. Empty when unknown or pruned.
    public func dependencies(of id: OperationID) -> [OperationID] {
        guard let index = index(of: id), !isPruned(index) else { return [] }
        return explicitDependencies(of: operations[index])
    }

    private func explicitDependencies(of record: OperationRecord) -> [OperationID] {
        record.dependencies.count == 0 ? [] : record.dependencies.filter { !$0.isImplicit }.map { id($0.index) }
    }

    /// The name and outcome of operation `id` once it finished (nil before, or when unknown or pruned),
    /// without building its whole snapshot.
    public func finishedOutcome(of id: OperationID) -> (name: String, outcome: Outcome)? {
        guard let index = index(of: id), !isPruned(index), let outcome = operations[index].outcome else { return nil }
        return (operations[index].name, outcome)
    }

    /// The state of `id` and, once it finished, how and why (nil when unknown or pruned), without building
    /// its whole snapshot: a job's summary asks it of every operation.
    public func ending(of id: OperationID) -> (state: OperationState, outcome: Outcome?, reason: FinishReason?)? {
        guard let index = index(of: id), !isPruned(index) else { return nil }
        let record = operations[index]
        return (record.state, record.outcome, record.reason)
    }

    /// A queue's settings and counts.
    public struct QueueSnapshot: Hashable, Sendable {
        public var name: String
        public var maxConcurrent: Int
        public var isSuspended: Bool
        /// Foundation's `operationCount`: unfinished operations, barriers excluded.
        public var operationCount: Int { counts.unfinished }
        /// Counts by state and outcome, barriers excluded.
        public var counts: OperationCounts
        /// Unfinished barriers.
        public var barriers: Int
        /// Why ready operations of this queue wait for a larger worker than any live one (README
        /// "Resources", R2), one line per size: "op-5 and 2 more: needs 16 cpus; the largest worker has 4 …".
        public var tooLarge: [String] = []
    }

    /// Names of all queues, in creation order.
    public var queueNames: [String] { queues.map(\.name) }

    /// The queue `name`, or nil if it was never used.
    public func queue(_ name: String) -> QueueSnapshot? {
        guard let index = queueIndex[name] else { return nil }
        let queue = queues[index]
        return QueueSnapshot(name: name, maxConcurrent: queue.maxConcurrent, isSuspended: queue.isSuspended,
                             counts: queue.counts, barriers: queue.unfinishedBarriers.count, tooLarge: tooLarge(inQueue: index))
    }

    /// Foundation's `operations`: the queue's unfinished operations in submission order, barriers excluded.
    /// - Complexity: O(unfinished operations of the queue, plus finished ones not yet compacted away).
    public func operations(inQueue name: String) -> [OperationID] {
        guard let index = queueIndex[name] else { return [] }
        return queues[index].members.filter { operations[$0].state != .finished && !operations[$0].isBarrier }.map(id)
    }

    /// True when the queue has nothing unfinished, barriers included: "wait until all operations are finished".
    public func isIdle(queue name: String) -> Bool {
        queueIndex[name].map { queues[$0].unfinished == 0 } ?? true
    }

    /// A job's operations and progress.
    public struct JobSnapshot: Hashable, Sendable {
        public var id: JobID
        /// Its operations in batch order, barriers included.
        public var operations: [OperationID]
        /// Counts by state and outcome, barriers excluded.
        public var counts: OperationCounts
        /// Every operation (barriers included) has finished.
        public var isFinished: Bool
    }

    /// Number of jobs ever accepted.
    public var jobCount: Int { jobs.count }

    /// The job `id`, or nil if unknown.
    public func job(_ id: JobID) -> JobSnapshot? {
        guard let index = index(of: id), !jobs[index].isPruned else { return nil }
        let job = jobs[index]
        return JobSnapshot(id: id, operations: (job.first..<job.first + job.count).map(self.id),
                           counts: job.counts, isFinished: job.unfinished == 0)
    }

    /// A live worker's registration and load.
    public struct WorkerSnapshot: Hashable, Sendable {
        public var id: WorkerID
        public var slots: Int
        /// Operations it holds (dispatched or executing), by id.
        public var operations: [OperationID]
        public var queues: Set<String>?
        public var labels: [String: String]
        public var lastSeen: Timestamp
        /// CPUs it offers, and those its operations take.
        public var cpus: Int, usedCpus: Int
        /// Bytes of memory it offers (nil: announced none, not checked), and those its operations take.
        public var memory: Int?, usedMemory: Int
    }

    /// Live workers in join order.
    public var workerSnapshots: [WorkerSnapshot] {
        liveWorkers.map { index in
            let worker = workers[index]
            return WorkerSnapshot(id: worker.id, slots: worker.slots, operations: worker.held.sorted().map(id),
                                  queues: worker.queueFilter, labels: worker.labels, lastSeen: worker.lastSeen,
                                  cpus: worker.cpus, usedCpus: worker.usedCpus,
                                  memory: capacity(of: index).memory, usedMemory: worker.usedMemory)
        }
    }
}

extension Scheduler {
    /// What a worker needs to run an attempt: the hot-path subset of ``OperationSnapshot``.
    public struct DispatchDetails: Sendable {
        public var name: String
        public var job: JobID
        public var queue: String
        public var work: Work
        public var qualityOfService: QualityOfService
        /// Attempt time limit in seconds (the core enforces it; workers may too).
        public var timeout: Double?

        /// Creates dispatch details.
        public init(name: String, job: JobID, queue: String, work: Work, qualityOfService: QualityOfService, timeout: Double?) {
            self.name = name
            self.job = job
            self.queue = queue
            self.work = work
            self.qualityOfService = qualityOfService
            self.timeout = timeout
        }
    }

    /// The details to send with a `.dispatch` of `id`, or nil if unknown.
    /// - Complexity: O(1); copies no dependency lists.
    public func dispatchDetails(_ id: OperationID) -> DispatchDetails? {
        index(of: id).map(dispatchDetails(at:))
    }

    /// The details to send with a `.dispatch` of the operation at `index` (the ``Effect/dispatch`` carries them).
    func dispatchDetails(at index: Int) -> DispatchDetails {
        DispatchDetails(
            name: operations[index].name, job: JobID(index: Int(operations[index].job)),
            queue: queues[Int(operations[index].queue)].name, work: operations[index].work,
            qualityOfService: operations[index].qualityOfService,
            timeout: operations[index].timeout > 0 ? operations[index].timeout : nil)
    }
}

extension Scheduler {
    /// The name of the queue of `id`, or nil if unknown. O(1).
    public func queueName(of id: OperationID) -> String? {
        index(of: id).map { queues[Int(operations[$0].queue)].name }
    }

    /// True when `attempt` of `operation` is the current one and the live worker behind `handle` holds it
    /// (dispatched or executing): the only reports about it that count, e.g. its progress. O(1).
    public func holds(_ handle: WorkerHandle, _ operation: OperationID, attempt: Int) -> Bool {
        guard let worker = live(handle) else { return false }
        return current(operation, attempt: attempt, worker: worker) != nil
    }

    /// True while the worker behind `handle` is registered (it has not left or been lost).
    public func isLive(_ handle: WorkerHandle) -> Bool { live(handle) != nil }

    /// The state of `id`, or nil if unknown. O(1), unlike ``operation(_:)``.
    public func state(of id: OperationID) -> OperationState? {
        index(of: id).map { operations[$0].state }
    }

    /// Whether every operation of `job` (barriers included) has finished; nil if unknown. O(1).
    public func isFinished(job: JobID) -> Bool? {
        guard let index = index(of: job), !jobs[index].isPruned else { return nil }
        return jobs[index].unfinished == 0
    }

    /// The worker id behind `handle` (also after it left).
    public func workerID(of handle: WorkerHandle) -> WorkerID { workers[Int(handle.index)].id }
}
