/// A broken internal invariant: a bug in the core, never a user error.
public struct InvariantViolation: Error, CustomStringConvertible {
    /// What is wrong, naming the operation, queue or worker.
    public let description: String
}

extension Scheduler {
    /// Checks every structural invariant of the core; tests call it after each step.
    ///
    /// Heap order and entries (each ready non-empty operation has exactly one live entry, in its queue's
    /// heap for its placement class), dependency counts against the graph, edge symmetry, slot
    /// accounting, each dispatched or executing operation on exactly one live worker, queue and job
    /// counts, and the finish queue drained between events.
    /// - Complexity: O(operations + edges + heap entries).
    public func checkInvariants() throws(InvariantViolation) {
        func fail(_ message: String) -> InvariantViolation { InvariantViolation(description: message) }

        var queueCounts = [OperationCounts](repeating: OperationCounts(), count: queues.count)
        var jobCounts = [OperationCounts](repeating: OperationCounts(), count: jobs.count)
        var active = [Int](repeating: 0, count: queues.count)
        var unfinished = [Int](repeating: 0, count: queues.count)
        var liveEntries = [Int: Int]()
        for queue in queues {
            for heap in queue.heaps {
                guard heap.heap.count >= heap.live else { throw fail("queue '\(queue.name)': heap smaller than its live count") }
                var live = 0
                for entry in heap.heap.unordered where operations[Int(entry.index)].heapToken == entry.token {
                    live += 1
                    liveEntries[Int(entry.index), default: 0] += 1
                    let record = operations[Int(entry.index)]
                    guard record.state == .ready, record.placement == heap.placement,
                          queues[Int(record.queue)].name == queue.name,
                          entry.key == ReadyEntry.key(priority: record.priority, sequence: record.sequence) else {
                        throw fail("\(id(Int(entry.index))): live heap entry does not match its record")
                    }
                }
                guard live == heap.live else { throw fail("queue '\(queue.name)': heap live count \(heap.live), found \(live)") }
                // Heap order: the minimum the heap reports is the smallest element.
                if let min = heap.heap.min, let smallest = heap.heap.unordered.min(), min.key != smallest.key {
                    throw fail("queue '\(queue.name)': heap order broken")
                }
            }
        }

        let forwardEdges = reservations.edgesPerDependant
        for (index, record) in operations.enumerated() {
            let name = "\(id(index)) '\(record.name)'"
            var unfinishedDependencies: UInt32 = record.state <= .ready ? forwardEdges[index, default: 0] : 0
            for edge in record.dependencies {
                if operations[edge.index].state != .finished { unfinishedDependencies += 1 }
                let back = operations[edge.index].dependants.filter { $0 == Edge(index, implicit: edge.isImplicit) }.count
                let forth = record.dependencies.filter { $0 == edge }.count
                guard back == forth else { throw fail("\(name): dependency edge to \(id(edge.index)) not mirrored") }
            }
            if record.state <= .ready, record.unfinishedDependencies != unfinishedDependencies {
                throw fail("\(name): counts \(record.unfinishedDependencies) unfinished dependencies, graph has \(unfinishedDependencies)")
            }
            switch record.state {
            case .pending:
                guard record.unfinishedDependencies > 0 || record.isWaitingForRetry else {
                    throw fail("\(name): pending with no unfinished dependency and no retry due")
                }
            case .ready:
                guard record.unfinishedDependencies == 0 else { throw fail("\(name): ready with unfinished dependencies") }
                if record.work.isEmpty {
                    guard !queues[Int(record.queue)].isRunning, queues[Int(record.queue)].heldEmpty.contains(index) else {
                        throw fail("\(name): empty operation ready but not held by a stopped queue")
                    }
                } else if liveEntries[index] != 1 {
                    throw fail("\(name): ready with \(liveEntries[index] ?? 0) live heap entries")
                }
            case .dispatched, .executing:
                let worker = Int(record.worker)
                let position = Int(record.heldPosition)
                guard worker >= 0, workers[worker].isAlive || workers[worker].isFenced || workerIndex[workers[worker].id] == worker,
                      position < workers[worker].held.count, workers[worker].held[position] == index else {
                    throw fail("\(name): \(record.state) but not held by a live, fenced or recovering worker")
                }
                active[Int(record.queue)] += 1
            case .finished:
                guard record.outcome != nil, record.worker == -1 else { throw fail("\(name): finished without outcome or still on a worker") }
                if record.outcome == .cancelled, !record.isCancelled { throw fail("\(name): cancelled without isCancelled") }
            }
            if record.state != .ready, liveEntries[index] != nil { throw fail("\(name): \(record.state) but has a live heap entry") }
            if record.state != .finished { unfinished[Int(record.queue)] += 1 }
            if !record.isBarrier {
                queueCounts[Int(record.queue)][record.state, record.outcome] += 1
                jobCounts[Int(record.job)][record.state, record.outcome] += 1
            }
        }

        var free = 0
        var held = 0
        for (index, worker) in workers.enumerated() {
            guard worker.isAlive else {
                if worker.isFenced {
                    guard workerIndex[worker.id] != index else { throw fail("worker \(worker.id): fenced but still indexed") }
                    held += worker.held.count
                    continue
                }
                let isRecovering = workerIndex[worker.id] == index
                guard worker.held.isEmpty || isRecovering else { throw fail("worker \(worker.id): gone but holds operations") }
                guard !isRecovering || worker.free == 0 else { throw fail("worker \(worker.id): recovering with free slots") }
                held += worker.held.count
                continue
            }
            guard workerIndex[worker.id] == index, liveWorkers.contains(index) else { throw fail("worker \(worker.id): not indexed") }
            for op in worker.held where operations[op].worker != Int32(index) {
                throw fail("worker \(worker.id): holds \(id(op)), which is not assigned to it")
            }
            let needs = worker.held.map { placementNeeds[Int(operations[$0].placement)] }
            guard worker.usedCpus == needs.reduce(0, { $0 + $1.cpus }),
                  worker.usedMemory == needs.reduce(0, { $0 &+ $1.memory }) else {
                throw fail("worker \(worker.id): uses \(worker.usedCpus) cpus and \(worker.usedMemory) bytes, its operations need other amounts")
            }
            free += worker.free
            held += worker.held.count
        }
        guard free == freeSlots else { throw fail("free slots \(freeSlots), workers have \(free)") }
        let recovering = workerIndex.values.filter { !workers[$0].isAlive }.count
        guard liveWorkers.count + recovering == workerIndex.count else { throw fail("live worker list and index disagree") }
        let holding = operations.filter { $0.state == .dispatched || $0.state == .executing }.count
        guard held == holding else { throw fail("workers hold \(held) operations, \(holding) are dispatched or executing") }

        var ready = 0
        for (q, queue) in queues.enumerated() {
            guard queue.counts == queueCounts[q] else { throw fail("queue '\(queue.name)': counts \(queue.counts), actual \(queueCounts[q])") }
            guard queue.active == active[q] else { throw fail("queue '\(queue.name)': active \(queue.active), actual \(active[q])") }
            guard queue.unfinished == unfinished[q] else { throw fail("queue '\(queue.name)': unfinished \(queue.unfinished), actual \(unfinished[q])") }
            guard queue.readyLive == queue.heaps.reduce(0, { $0 + $1.live }) else { throw fail("queue '\(queue.name)': ready count drifted") }
            let members = Set(queue.members)
            for (index, record) in operations.enumerated() where Int(record.queue) == q && record.state != .finished {
                guard members.contains(index) else { throw fail("queue '\(queue.name)': \(id(index)) missing from members") }
            }
            let barriers = operations.indices.filter { Int(operations[$0].queue) == q && operations[$0].isBarrier && operations[$0].state != .finished }
            guard barriers == queue.unfinishedBarriers else { throw fail("queue '\(queue.name)': unfinished barriers drifted") }
            ready += queue.readyLive
        }
        guard ready == readyLive else { throw fail("ready count \(readyLive), queues have \(ready)") }
        for (j, job) in jobs.enumerated() {
            guard job.counts == jobCounts[j] else { throw fail("\(JobID(index: j)): counts \(job.counts), actual \(jobCounts[j])") }
            let left = (job.first..<job.first + job.count).filter { operations[$0].state != .finished }.count
            guard job.unfinished == left else { throw fail("\(JobID(index: j)): unfinished \(job.unfinished), actual \(left)") }
        }
        guard finishQueue.isEmpty, !isDrainingFinishes else { throw fail("finish queue not drained between events") }
        try checkFinishedJobs()
    }

    /// The finish order holds each finished, unpruned job exactly once, and counts its stale entries.
    /// - Complexity: O(jobs).
    func checkFinishedJobs() throws(InvariantViolation) {
        var seen = Set<Int>()
        var stale = 0
        for index in finishedJobs.entries {
            guard jobs.indices.contains(index), jobs[index].unfinished == 0 else {
                throw InvariantViolation(description: "\(JobID(index: index)) is in the finish order but not finished")
            }
            guard seen.insert(index).inserted else {
                throw InvariantViolation(description: "\(JobID(index: index)) is twice in the finish order")
            }
            if jobs[index].isPruned { stale += 1 }
        }
        guard stale == finishedJobs.stale else {
            throw InvariantViolation(description: "finish order counts \(finishedJobs.stale) stale entries, has \(stale)")
        }
        for (index, job) in jobs.enumerated() where job.unfinished == 0 && !job.isPruned && !seen.contains(index) {
            throw InvariantViolation(description: "\(JobID(index: index)) finished but is missing from the finish order")
        }
    }
}
