/// Why an operation that is not running has not started: what a user asks first when something
/// "hangs" (`opq show`). Every answer names what to look at.
extension Scheduler {
    /// One reason an operation waits. An operation can have several at once (its dependencies and a
    /// suspended queue); all are listed, in the order a user would address them.
    public enum Blocker: Hashable, Sendable, CustomStringConvertible {
        /// These dependencies have not finished (explicit ones and the barrier it waits behind), in
        /// the order they were added.
        case dependencies([OperationID])
        /// A failed attempt's backoff runs; it becomes ready at the time given (the core's clock).
        case retryBackoff
        /// Its queue is suspended (`opq resume --queue NAME`).
        case queueSuspended(String)
        /// Its queue is at its `maxConcurrentOperationCount` (0 holds everything).
        case queueAtLimit(String, limit: Int)
        /// No live worker serves its queue with the labels it requires.
        case noWorker(queue: String, labels: [String: String])
        /// Workers that could take it have no free slot: it is in line (priority, then age).
        case workersBusy

        public var description: String {
            switch self {
            case .dependencies(let ids):
                "waits for \(ids.map(\.description).joined(separator: " and "))"
            case .retryBackoff:
                "waits for its retry's backoff to end"
            case .queueSuspended(let queue):
                "its queue '\(queue)' is suspended (opq resume --queue \(queue))"
            case .queueAtLimit(let queue, let limit):
                limit == 0
                    ? "its queue '\(queue)' has max concurrent 0: nothing of it starts (opq queue set \(queue) --max-concurrent N)"
                    : "its queue '\(queue)' already runs its maximum of \(limit)"
            case .noWorker(let queue, let labels):
                labels.isEmpty
                    ? "no live worker serves the queue '\(queue)'"
                    : "no live worker serves the queue '\(queue)' with the labels "
                        + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            case .workersBusy:
                "in line for a free worker slot"
            }
        }
    }

    /// Why `id` has not started; empty for an unknown operation and for one that is dispatched,
    /// executing or finished.
    ///
    /// - Complexity: O(dependencies + live workers).
    public func blockers(of id: OperationID) -> [Blocker] {
        guard let index = index(of: id), !isPruned(index) else { return [] }
        let record = operations[index]
        guard record.state == .pending || record.state == .ready else { return [] }
        var blockers: [Blocker] = []
        if record.isWaitingForRetry { blockers.append(.retryBackoff) }
        let waiting = record.dependencies.filter { operations[$0.index].state != .finished }.map { self.id($0.index) }
        if !waiting.isEmpty { blockers.append(.dependencies(waiting)) }
        // Cancelled operations and empty ones never go to a worker: only the queue can hold them.
        let queue = queues[Int(record.queue)]
        if queue.isSuspended { blockers.append(.queueSuspended(queue.name)) }
        if queue.maxConcurrent == 0 || (queue.maxConcurrent > 0 && queue.active >= queue.maxConcurrent) {
            blockers.append(.queueAtLimit(queue.name, limit: queue.maxConcurrent))
        }
        guard !record.isCancelled, !record.work.isEmpty else { return blockers }
        let eligible = liveWorkers.filter {
            workers[$0].servesQueue[Int(record.queue)] && workers[$0].fitsPlacement[Int(record.placement)]
        }
        if eligible.isEmpty {
            blockers.append(.noWorker(queue: queue.name, labels: placements[Int(record.placement)]))
        } else if record.state == .ready, blockers.isEmpty, eligible.allSatisfy({ workers[$0].free == 0 }) {
            blockers.append(.workersBusy)
        }
        return blockers
    }
}
