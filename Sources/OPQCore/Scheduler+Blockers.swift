/// Why an operation that is not running has not started: what a user asks first when something
/// "hangs" (`opq show`). Every answer names what to look at.
extension Scheduler {
    /// One reason an operation waits. An operation can have several at once (its dependencies and a
    /// suspended queue); all are listed, in the order a user would address them.
    public enum Blocker: Hashable, Sendable, CustomStringConvertible {
        /// These dependencies have not finished (explicit ones and the barrier it waits behind), in
        /// the order they were added; then the reservations (`op-rN`, operations not submitted yet) it waits on.
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
        /// No live worker serving its queue with its labels is large enough for it (the most CPUs and
        /// memory any of them offers; memory nil when one announced none): it waits for one that is.
        case tooLarge(needs: Resources, mostCpus: Int, mostMemory: Int?)
        /// Workers that could hold it have not enough CPUs or memory free now, or are reserved for an
        /// operation ahead of it in line: it is in line (README "Resources").
        case resourcesBusy(needs: Resources)

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
            case let .tooLarge(needs, mostCpus, mostMemory):
                Blocker.tooLargeText(needs, mostCpus: mostCpus, mostMemory: mostMemory)
            case .resourcesBusy(let needs):
                "in line for a worker with \(needs) free"
            }
        }
    }

    /// Why `id` has not started; empty for an unknown operation and for one that is dispatched,
    /// executing or finished.
    ///
    /// - Complexity: O(dependencies + live workers), plus O(forward edges) when reservations are open.
    public func blockers(of id: OperationID) -> [Blocker] {
        guard let index = index(of: id), !isPruned(index) else { return [] }
        let record = operations[index]
        guard record.state == .pending || record.state == .ready else { return [] }
        var blockers: [Blocker] = []
        if record.isWaitingForRetry { blockers.append(.retryBackoff) }
        let waiting = record.dependencies.filter { operations[$0.index].state != .finished }.map { self.id($0.index) }
            + reservations(awaitedBy: index)
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
        } else if let blocker = resourceBlocker(of: index, eligible: eligible, isInLine: record.state == .ready && blockers.isEmpty) {
            blockers.append(blocker)
        } else if record.state == .ready, blockers.isEmpty, eligible.allSatisfy({ workers[$0].free == 0 }) {
            blockers.append(.workersBusy)
        }
        return blockers
    }
}

extension Scheduler.Blocker {
    /// "needs 8 cpus; the largest worker has 4": the dimension that no worker offers, with the most any does.
    static func tooLargeText(_ needs: Resources, mostCpus: Int, mostMemory: Int?) -> String {
        let cpusShort = needs.cpus > mostCpus
        let memoryShort = mostMemory.map { needs.memory > $0 } ?? false
        let what: String
        switch (cpusShort, memoryShort) {
        case (true, false):
            what = "needs \(needs.cpus) cpus; the largest worker has \(mostCpus)"
        case (false, true):
            what = "needs \(ByteSize.format(needs.memory)) of memory; the largest worker has \(ByteSize.format(mostMemory ?? 0))"
        case (true, true):
            what = "needs \(needs); the largest workers have \(mostCpus) cpus and \(ByteSize.format(mostMemory ?? 0)) of memory"
        case (false, false):
            what = "needs \(needs) on one worker; no live worker has both"
        }
        return what + " (it waits until a worker that large registers)"
    }
}
