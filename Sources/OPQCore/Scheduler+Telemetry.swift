/// Cheap read-only views for metrics and the dashboard: O(1), no per-operation copies.
extension Scheduler {
    /// A job's progress without its operation list (``job(_:)`` copies every id).
    public struct JobProgress: Hashable, Sendable {
        /// Its first operation (its operations are contiguous).
        public var firstOperation: OperationID
        /// Its operations, barriers included.
        public var operationCount: Int
        /// Counts by state and outcome, barriers excluded.
        public var counts: OperationCounts
        /// Every operation (barriers included) has finished.
        public var isFinished: Bool
    }

    /// The progress of `job`, or nil when unknown or pruned.
    /// - Complexity: O(1).
    public func progress(of job: JobID) -> JobProgress? {
        guard let index = index(of: job), !jobs[index].isPruned else { return nil }
        let record = jobs[index]
        return JobProgress(firstOperation: id(record.first), operationCount: record.count, counts: record.counts,
                           isFinished: record.unfinished == 0)
    }

    /// The name of operation `id` (empty when unnamed), or nil if unknown. O(1).
    public func name(of id: OperationID) -> String? {
        index(of: id).map { operations[$0].name }
    }

    /// Workers declared lost since this core was created (heartbeats stopped or a send failed); workers
    /// that said goodbye are not counted.
    public var workersLost: Int { lostWorkerCount }
}
