/// State transitions shared by every event: ready, dispatch, finish, and the release of dependants.
extension Scheduler {
    /// Operation `index` becomes `ready` (from pending, or back from a worker that lost it).
    ///
    /// An empty operation needs no worker: it finishes at once if its queue runs, else waits until it does.
    /// - Complexity: O(log n) for the ready heap.
    mutating func makeReady(_ index: Int, reason: FinishReason? = nil, report: AttemptReport? = nil) {
        setState(index, .ready)
        operations[index].worker = -1
        if reason == .lostWorker { effects.append(.journal(.requeue(id(index)))) }
        notify(index, reason: reason, report: report)
        let queue = Int(operations[index].queue)
        if operations[index].work.isEmpty {
            if queues[queue].isRunning {
                enqueueFinish(index, .succeeded, .completed)
            } else {
                queues[queue].heldEmpty.append(index)
            }
        } else {
            pushReady(index)
        }
    }

    /// Inserts a live heap entry for ready operation `index`.
    mutating func pushReady(_ index: Int) {
        let queue = Int(operations[index].queue)
        let placement = operations[index].placement
        let heap: Int
        if let found = queues[queue].heaps.firstIndex(where: { $0.placement == placement }) {
            heap = found
        } else {
            heap = queues[queue].heaps.count
            queues[queue].heaps.append(ReadyHeap(placement: placement))
        }
        let entry = ReadyEntry(
            key: ReadyEntry.key(priority: operations[index].priority, sequence: operations[index].sequence),
            index: UInt32(index), token: operations[index].heapToken)
        queues[queue].heaps[heap].heap.insert(entry)
        queues[queue].heaps[heap].live += 1
        queues[queue].readyLive += 1
        readyLive += 1
    }

    /// Invalidates the heap entry of ready operation `index` (it is leaving `ready`, or being re-keyed).
    mutating func leaveReady(_ index: Int) {
        operations[index].heapToken &+= 1
        guard !operations[index].work.isEmpty else { return }  // held empties are filtered when released
        let queue = Int(operations[index].queue)
        let placement = operations[index].placement
        let heap = queues[queue].heaps.firstIndex { $0.placement == placement }!
        queues[queue].heaps[heap].live -= 1
        queues[queue].readyLive -= 1
        readyLive -= 1
        let count = queues[queue].heaps[heap].heap.count
        if count > 64 && count > 2 * queues[queue].heaps[heap].live {
            let live = queues[queue].heaps[heap].heap.unordered.filter { operations[Int($0.index)].heapToken == $0.token }
            queues[queue].heaps[heap].heap = .init(live)
        }
    }

    /// Finishes every ready empty operation of `queue` that its suspension or `maxConcurrent == 0` held.
    mutating func releaseHeldEmpties(_ queue: Int) {
        guard queues[queue].isRunning, !queues[queue].heldEmpty.isEmpty else { return }
        let held = queues[queue].heldEmpty
        queues[queue].heldEmpty.removeAll()
        for index in held where operations[index].state == .ready {
            enqueueFinish(index, .succeeded, .completed)
        }
        drainFinishes()
    }

    // MARK: - Dispatch

    /// Dispatches ready operations into free worker slots until no more can go.
    ///
    /// Each step takes the best operation, by priority then submission order over every queue with
    /// capacity, that some live worker can take, and gives it to the capable worker with the most free
    /// slots (ties: the earliest joined). Only free slots are filled: no prefetch. An operation that
    /// does not fit any worker now reserves one for itself (``worker(for:heap:reserved:)``).
    /// - Complexity: O(log n + q·c + w) per dispatch for q queues, c placement classes, w workers.
    mutating func pump() {
        while readyLive > 0 && freeSlots > 0 {
            guard let (queue, heap, worker) = nextPlacement() else { return }
            let entry = queues[queue].heaps[heap].heap.removeMin()
            dispatch(Int(entry.index), to: worker)
        }
    }

    /// The best dispatchable (queue, heap, worker), or nil.
    mutating func nextPlacement() -> (Int, Int, Int)? {
        candidates.removeAll(keepingCapacity: true)
        for queue in queues.indices where queues[queue].readyLive > 0 && queues[queue].hasCapacity {
            for heap in queues[queue].heaps.indices where queues[queue].heaps[heap].live > 0 {
                // Drop stale entries from the top so the top is live.
                while let top = queues[queue].heaps[heap].heap.min, operations[Int(top.index)].heapToken != top.token {
                    _ = queues[queue].heaps[heap].heap.removeMin()
                }
                candidates.append((queues[queue].heaps[heap].heap.min!.key, queue, heap))
            }
        }
        if candidates.count > 1 { candidates.sort { $0.key < $1.key } }
        var reserved: [Int] = []  // workers held for an operation earlier in line (Scheduler+Resources)
        for candidate in candidates {
            if let best = worker(for: candidate.queue, heap: candidate.heap, reserved: &reserved) {
                return (candidate.queue, candidate.heap, best)
            }
        }
        return nil
    }

    /// Sends operation `index` (ready, its heap entry already removed) to `worker` as a new attempt.
    mutating func dispatch(_ index: Int, to worker: Int) {
        operations[index].heapToken &+= 1
        let queue = Int(operations[index].queue)
        queues[queue].heaps[queues[queue].heaps.firstIndex { $0.placement == operations[index].placement }!].live -= 1
        queues[queue].readyLive -= 1
        readyLive -= 1
        queues[queue].active += 1
        takeSlot(of: worker, for: index)
        operations[index].attempt += 1
        operations[index].killReason = nil
        setState(index, .dispatched)
        let attempt = Int(operations[index].attempt)
        effects.append(.journal(.attempt(id(index), attempt: attempt, worker: workers[worker].id)))
        effects.append(.dispatch(id(index), attempt: attempt, worker: workers[worker].id, details: dispatchDetails(at: index)))
        notify(index)
    }

    mutating func takeSlot(of worker: Int, for index: Int) {
        freeSlots -= workers[worker].free
        operations[index].heldPosition = UInt32(workers[worker].held.count)
        workers[worker].held.append(index)
        freeSlots += workers[worker].free
        charge(worker, for: index, times: 1)
        operations[index].worker = Int32(worker)
    }

    /// Frees the slot of the worker holding operation `index` (dispatched or executing).
    mutating func releaseSlot(_ index: Int) {
        let worker = Int(operations[index].worker)
        let queue = Int(operations[index].queue)
        queues[queue].active -= 1
        if workers[worker].isAlive { freeSlots -= workers[worker].free }
        charge(worker, for: index, times: -1)
        let position = Int(operations[index].heldPosition)
        let last = workers[worker].held.removeLast()
        if last != index {
            workers[worker].held[position] = last
            operations[last].heldPosition = UInt32(position)
        }
        if workers[worker].isAlive { freeSlots += workers[worker].free }
    }

    // MARK: - Finish

    /// Schedules operation `index` to finish; `drainFinishes()` carries it out.
    mutating func enqueueFinish(_ index: Int, _ outcome: Outcome, _ reason: FinishReason, report: AttemptReport? = nil) {
        if outcome == .cancelled { operations[index].isCancelled = true }
        finishQueue.append((index, outcome, reason, report))
    }

    /// Finishes every scheduled operation, and those their finish cascades to, without recursion.
    mutating func drainFinishes() {
        guard !isDrainingFinishes else { return }
        isDrainingFinishes = true
        var next = 0
        while next < finishQueue.count {
            let item = finishQueue[next]
            next += 1
            if operations[item.index].state != .finished {
                finish(item.index, item.outcome, item.reason, report: item.report)
            }
        }
        finishQueue.removeAll(keepingCapacity: true)
        isDrainingFinishes = false
    }

    /// Finishes operation `index` now and releases (or, under `requires: success`, cancels) its dependants.
    /// - Complexity: O(number of dependants).
    mutating func finish(_ index: Int, _ outcome: Outcome, _ reason: FinishReason, report: AttemptReport?) {
        switch operations[index].state {
        case .ready: leaveReady(index)
        case .dispatched, .executing: releaseSlot(index)
        case .pending, .finished: break
        }
        operations[index].isWaitingForRetry = false
        operations[index].reason = reason
        setState(index, .finished, outcome: outcome)
        effects.append(.journal(.finished(id(index), outcome, reason, report: report)))
        notify(index, reason: reason, report: report)
        operations[index].worker = -1

        let queue = Int(operations[index].queue)
        queues[queue].unfinished -= 1
        if operations[index].isBarrier {
            queues[queue].unfinishedBarriers.removeAll { $0 == index }
        }
        if queues[queue].members.count > 32 && queues[queue].members.count > 2 * queues[queue].unfinished {
            queues[queue].members.removeAll { operations[$0].state == .finished }
        }
        let job = Int(operations[index].job)
        jobs[job].unfinished -= 1
        if jobs[job].unfinished == 0 {
            finishedJobs.append(job)
            effects.append(.jobFinished(JobID(index: job)))
        }

        for edge in operations[index].dependants {
            let dependant = edge.index
            guard operations[dependant].state == .pending else { continue }
            operations[dependant].unfinishedDependencies -= 1
            if outcome != .succeeded, !edge.isImplicit, operations[dependant].requires == .success {
                enqueueFinish(dependant, .cancelled, .dependencyFailed)
            } else if operations[dependant].unfinishedDependencies == 0,
                      !operations[dependant].isWaitingForRetry, !operations[dependant].isCancelled {
                makeReady(dependant)
            }
        }
    }

    /// A failed attempt of dispatched or executing operation `index`: retried after backoff if it may be,
    /// else the operation finishes `failed`.
    mutating func attemptFailed(_ index: Int, reason: FinishReason, report: AttemptReport?) {
        guard operations[index].retriesLeft > 0, !operations[index].isCancelled else {
            enqueueFinish(index, .failed, reason, report: report)
            return
        }
        operations[index].retriesLeft -= 1
        releaseSlot(index)
        operations[index].worker = -1
        operations[index].killReason = nil
        operations[index].isWaitingForRetry = true
        operations[index].reason = reason
        let doublings = min(Int(operations[index].attempt) - 1, 30)
        let backoff = min(configuration.retryBackoff * Double(1 << doublings), configuration.maxRetryBackoff)
        let deadline = now + backoff
        timers.insert(TimerEntry(deadline: deadline, index: UInt32(index), attempt: operations[index].attempt, kind: .retry))
        setState(index, .pending)
        effects.append(.journal(.retry(id(index), reason: reason)))
        notify(index, reason: reason, report: report, retryAt: deadline)
    }
}
