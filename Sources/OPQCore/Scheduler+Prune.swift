/// Forgetting finished jobs (`opq prune`): a pruned job's id range stays reserved, so ids are never
/// reused and later dependencies on its operations still count as finished, but its details are gone.
extension Scheduler {
    /// A finished job as the journal keeps it after pruning: its id range and its operations' outcomes.
    public struct PrunedJob: Sendable, Equatable {
        public var job: JobID
        public var first: OperationID
        /// Outcomes in batch order.
        public var outcomes: [Outcome]

        public init(job: JobID, first: OperationID, outcomes: [Outcome]) {
            self.job = job
            self.first = first
            self.outcomes = outcomes
        }
    }

    /// Prunes `job` if every operation of it has finished; returns what the journal keeps, or nil (an
    /// unknown, unfinished or already pruned job).
    /// - Complexity: O(operations of the job).
    public mutating func prune(job id: JobID) -> PrunedJob? {
        guard let jobIndex = index(of: id), !jobs[jobIndex].isPruned, jobs[jobIndex].unfinished == 0 else { return nil }
        let job = jobs[jobIndex]
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(job.count)
        for index in job.first..<job.first + job.count {
            outcomes.append(operations[index].outcome ?? .succeeded)
            forget(index)
        }
        jobs[jobIndex].isPruned = true
        jobs[jobIndex].counts = OperationCounts()
        if finishedJobs.first == jobIndex {
            finishedJobs.removeFirst(wasStale: false)
        } else {
            let jobs = self.jobs
            finishedJobs.markStale { !jobs[$0].isPruned }
        }
        return PrunedJob(job: id, first: self.id(job.first), outcomes: outcomes)
    }

    /// Prunes finished jobs oldest first (in the order they finished) for as long as `shouldPrune` holds,
    /// and returns what the journal keeps of them. It stops at the first finished job `shouldPrune`
    /// refuses: with a cutoff on finish times, a job that finished later is never older (a wall clock
    /// stepped back can keep an older one until the newer goes).
    /// - Complexity: O(jobs pruned + their operations + 1), plus O(1) amortized per job pruned out of
    ///   order since (``prune(job:)``): a prune that removes nothing looks at one job.
    public mutating func pruneFinished(while shouldPrune: (JobID) -> Bool) -> [PrunedJob] {
        var pruned: [PrunedJob] = []
        while let index = finishedJobs.first {
            pruneVisits += 1
            if jobs[index].isPruned {
                finishedJobs.removeFirst(wasStale: true)
                continue
            }
            guard shouldPrune(JobID(index: index)), let record = prune(job: JobID(index: index)) else { break }
            pruned.append(record)
        }
        return pruned
    }

    /// Replays a pruned job: its ids are taken, its operations exist as finished with their outcomes.
    /// Must come exactly where its submission came (the next job id and operation id).
    public mutating func restorePruned(_ pruned: PrunedJob) throws(RequestError) {
        guard pruned.job == JobID(index: jobs.count), pruned.first == OperationID(index: operations.count) else {
            throw .unknownJob(pruned.job)
        }
        let queue = queues.isEmpty ? self.queue(named: "default") : 0
        jobs.append(JobRecord(first: operations.count, count: pruned.outcomes.count, unfinished: 0, isPruned: true))
        for outcome in pruned.outcomes {
            var record = OperationRecord(
                name: "", work: .empty, sequence: nextSequence, timeout: 0, job: UInt32(jobs.count - 1), queue: UInt32(queue),
                placement: 0, retriesLeft: 0, priority: .normal, qualityOfService: .default, requires: .any, isBarrier: true)
            record.state = .finished
            record.outcome = outcome
            record.isCancelled = outcome == .cancelled
            operations.append(record)
        }
    }

    /// Drops what a finished operation no longer needs. It stays a finished record marked like a barrier,
    /// which keeps it out of every count and listing.
    mutating func forget(_ index: Int) {
        let queue = Int(operations[index].queue)
        if !operations[index].isBarrier { queues[queue].counts[.finished, operations[index].outcome] -= 1 }
        operations[index].name = ""
        operations[index].work = .empty
        operations[index].dependencies = EdgeList()
        operations[index].dependants = EdgeList()
        operations[index].isBarrier = true
    }

    /// Whether operation `index` belongs to a pruned job.
    func isPruned(_ index: Int) -> Bool { jobs[Int(operations[index].job)].isPruned }
}
