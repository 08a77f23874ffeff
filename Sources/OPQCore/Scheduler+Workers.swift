/// Workers: joining, heartbeats, reports of started and finished attempts, loss, and time (SEMANTICS §7).
extension Scheduler {
    /// What a (re)joining worker says it still holds.
    public struct HeldAttempt: Hashable, Sendable {
        /// The operation.
        public var operation: OperationID
        /// The attempt the worker runs.
        public var attempt: Int

        /// Creates a held attempt.
        public init(_ operation: OperationID, attempt: Int) {
            self.operation = operation
            self.attempt = attempt
        }
    }

    /// A live worker's registration in this core: cheaper than looking its ``WorkerID`` up on every
    /// report. A handle from before the worker left or was lost stays dead (its reports are ignored),
    /// even if a worker of the same name joins again.
    public struct WorkerHandle: Hashable, Sendable {
        let index: Int32
    }

    /// A worker registers (or re-registers after a reconnect) with `slots` slots, optionally serving only
    /// `queues`, carrying placement `labels`, offering `cpus` CPUs (nil: as many as slots) and `memory`
    /// bytes (nil: not announced, so memory is not checked on it), and still holding `holding`.
    ///
    /// Reconciliation: an attempt it still holds stays its own; one the core had given it that it no
    /// longer holds is lost; one it holds that was requeued but not yet given to anyone else is taken
    /// back; one that belongs to someone else now (or is finished) is killed as stale.
    @discardableResult
    public mutating func workerJoined(
        _ id: WorkerID, slots: Int, queues filter: Set<String>? = nil, labels: [String: String] = [:],
        cpus: Int? = nil, memory: Int? = nil, holding: [HeldAttempt] = [], at time: Timestamp
    ) -> WorkerHandle {
        now = time
        let worker: Int
        var wasRecovering = false
        if let existing = workerIndex[id] {
            worker = existing
            freeSlots -= workers[worker].free
            workers[worker].slots = max(0, slots)
            if !workers[worker].isAlive {
                // A recovering worker (see Scheduler+Recovery) is back: it goes live with what it holds.
                wasRecovering = true
                workers[worker].isAlive = true
                liveWorkers.append(worker)
            }
            freeSlots += workers[worker].free
        } else {
            worker = workers.count
            workers.append(WorkerRecord(id: id, slots: max(0, slots), labels: labels, lastSeen: time))
            workerIndex[id] = worker
            liveWorkers.append(worker)
            freeSlots += workers[worker].free
        }
        workers[worker].queueFilter = filter
        workers[worker].labels = labels
        workers[worker].cpus = max(0, cpus ?? slots)
        workers[worker].memory = memory.map { max(0, $0) } ?? Int.max
        workers[worker].lastSeen = time
        workers[worker].servesQueue = queues.map { filter?.contains($0.name) ?? true }
        workers[worker].fitsPlacement = placements.map { Scheduler.fits($0, labels) }

        let reported = Dictionary(holding.map { ($0.operation, $0.attempt) }, uniquingKeysWith: { first, _ in first })
        // (A recovered attempt its worker never got, because the coordinator died first, is not the
        // worker's fault: it does not count toward the lost-worker limit.)
        for index in workers[worker].held.sorted() where reported[self.id(index)] != Int(operations[index].attempt) {
            requeue(index, lost: !wasRecovering)
        }
        for held in holding {
            guard let index = self.index(of: held.operation) else { continue }
            let record = operations[index]
            if record.worker == Int32(worker), Int(record.attempt) == held.attempt {
                // A kill decided while the worker was recovering is sent now that it can be.
                if wasRecovering, let reason = record.killReason {
                    effects.append(.kill(held.operation, attempt: held.attempt, worker: id, reason: reason))
                }
                continue
            }
            if record.state == .ready, Int(record.attempt) == held.attempt, !record.work.isEmpty,
               hasRoom(worker, for: placementNeeds[Int(record.placement)]), workers[worker].servesQueue[Int(record.queue)] {
                adopt(index, by: worker)
            } else {
                effects.append(.kill(held.operation, attempt: held.attempt, worker: id, reason: .stale))
            }
        }
        settle()
        return WorkerHandle(index: Int32(worker))
    }

    /// The live worker behind `handle`, or nil once it left or was lost.
    func live(_ handle: WorkerHandle) -> Int? {
        let worker = Int(handle.index)
        return workers.indices.contains(worker) && workers[worker].isAlive ? worker : nil
    }

    /// A requeued attempt still running on the worker that reports it: it becomes that worker's again.
    mutating func adopt(_ index: Int, by worker: Int) {
        let queue = Int(operations[index].queue)
        leaveReady(index)
        queues[queue].active += 1
        takeSlot(of: worker, for: index)
        setState(index, .executing)
        effects.append(.journal(.adopted(id(index), attempt: Int(operations[index].attempt), worker: workers[worker].id)))
        notify(index)
    }

    /// The worker left on purpose (graceful shutdown): what it held goes back to `ready` without
    /// counting against the operations' lost-worker limit.
    public mutating func workerLeft(_ id: WorkerID, at time: Timestamp) {
        now = time
        guard let worker = workerIndex[id] else { return }
        remove(worker, lost: false)
        settle()
    }

    /// The worker is declared lost (it stopped sending heartbeats, or its connection broke): it is
    /// fenced, and what it held goes back to `ready` as a new attempt once its lease has surely run out —
    /// ``Configuration/leaseMargin`` after `time`, or after its lease's latest end (last heard +
    /// ``Configuration/workerTimeout``) if that is later — unless that operation has then lost too many
    /// workers.
    public mutating func workerLost(_ id: WorkerID, at time: Timestamp) {
        now = time
        guard let worker = workerIndex[id] else { return }
        fence(worker)
        settle()
    }

    /// Declares `worker` lost (SEMANTICS §7, leases): it takes nothing more, and each attempt it holds
    /// stays on it (dispatched or executing, counted in its queue's active operations) until a `lease`
    /// timer requeues it (``requeue(_:lost:)``, counting the lost worker) at
    /// `max(now, lastSeen + workerTimeout) + leaseMargin`. By then the worker has stopped the attempt: it
    /// kills what it runs when its own lease (``Configuration/workerTimeout`` from its last message the
    /// coordinator answered) runs out, and that is never later than `lastSeen + workerTimeout` — also
    /// when the worker is declared lost early (its connection broke): it may still be running then. A
    /// worker of the same name that registers in the meantime is a new record: the fenced attempts are
    /// not its own.
    mutating func fence(_ worker: Int) {
        guard configuration.leaseMargin > 0, !workers[worker].held.isEmpty else { return remove(worker, lost: true) }
        freeSlots -= workers[worker].free
        workers[worker].isAlive = false
        workers[worker].isFenced = true
        workerIndex[workers[worker].id] = nil
        liveWorkers.removeAll { $0 == worker }
        let deadline = max(now, workers[worker].lastSeen + configuration.workerTimeout) + configuration.leaseMargin
        for index in workers[worker].held.sorted() {
            timers.insert(TimerEntry(deadline: deadline, index: UInt32(index), attempt: operations[index].attempt, kind: .lease))
        }
    }

    mutating func remove(_ worker: Int, lost: Bool) {
        freeSlots -= workers[worker].free
        workers[worker].isAlive = false
        if lost { lostWorkerCount += 1 }
        workerIndex[workers[worker].id] = nil
        liveWorkers.removeAll { $0 == worker }
        for index in workers[worker].held.sorted() { requeue(index, lost: lost) }
    }

    /// Operation `index` lost its worker's attempt.
    mutating func requeue(_ index: Int, lost: Bool) {
        if operations[index].isCancelled {
            enqueueFinish(index, .cancelled, .cancelRequested)
            drainFinishes()
            return
        }
        if operations[index].killReason == .timeout {
            attemptFailed(index, reason: .timeout, report: nil)
            drainFinishes()
            return
        }
        if lost { operations[index].lostWorkers += 1 }
        if Int(operations[index].lostWorkers) >= configuration.maxLostWorkers {
            enqueueFinish(index, .failed, .lostWorker)
            drainFinishes()
            return
        }
        releaseSlot(index)
        operations[index].killReason = nil
        makeReady(index, reason: .lostWorker)  // keeps its sequence: its place by priority and age
    }

    /// Anything heard from a worker counts as a heartbeat.
    public mutating func heartbeat(from id: WorkerID, at time: Timestamp) {
        now = time
        if let worker = workerIndex[id] { workers[worker].lastSeen = time }
    }

    /// Anything heard from a worker counts as a heartbeat.
    public mutating func heartbeat(from handle: WorkerHandle, at time: Timestamp) {
        now = time
        if let worker = live(handle) { workers[worker].lastSeen = time }
    }

    /// The worker reports it started `attempt` of `operation`. Returns false (and changes nothing) for a
    /// report that is not about the worker's current attempt.
    @discardableResult
    public mutating func started(_ operation: OperationID, attempt: Int, worker id: WorkerID, at time: Timestamp) -> Bool {
        guard let worker = workerIndex[id] else { return false }
        return started(operation, attempt: attempt, worker: WorkerHandle(index: Int32(worker)), at: time)
    }

    /// ``started(_:attempt:worker:at:)`` by handle.
    @discardableResult
    public mutating func started(_ operation: OperationID, attempt: Int, worker handle: WorkerHandle, at time: Timestamp) -> Bool {
        now = time
        guard let worker = live(handle) else { return false }
        workers[worker].lastSeen = time
        guard let index = current(operation, attempt: attempt, worker: worker), operations[index].state == .dispatched else {
            return false
        }
        setState(index, .executing)
        operations[index].startedAt = time
        notify(index)
        if operations[index].timeout > 0 {
            timers.insert(TimerEntry(deadline: time + operations[index].timeout, index: UInt32(index),
                                     attempt: operations[index].attempt, kind: .timeout))
        }
        return true
    }

    /// The worker reports `attempt` of `operation` ended. Stale reports (an attempt given to another
    /// worker, or already finished) are ignored and return false: each operation finishes exactly once.
    ///
    /// Outcome: success wins even over a cancel that arrived too late; otherwise a cancelled operation
    /// finishes `cancelled`, a timed-out one `failed` (timeout), anything else `failed` — and failed
    /// attempts are retried while `retries` allow.
    @discardableResult
    public mutating func finished(_ operation: OperationID, attempt: Int, worker id: WorkerID,
                                  _ report: AttemptReport, at time: Timestamp) -> Bool {
        guard let worker = workerIndex[id] else { return false }
        return finished(operation, attempt: attempt, worker: WorkerHandle(index: Int32(worker)), report, at: time)
    }

    /// ``finished(_:attempt:worker:_:at:)`` by handle.
    @discardableResult
    public mutating func finished(_ operation: OperationID, attempt: Int, worker handle: WorkerHandle,
                                  _ report: AttemptReport, at time: Timestamp) -> Bool {
        now = time
        guard let worker = live(handle) else { return false }
        workers[worker].lastSeen = time
        guard let index = current(operation, attempt: attempt, worker: worker) else { return false }
        if report.status == .succeeded {
            enqueueFinish(index, .succeeded, report.reason == .upToDate ? .upToDate : .completed, report: report)
        } else if operations[index].isCancelled {
            enqueueFinish(index, .cancelled, .cancelRequested, report: report)
        } else if operations[index].killReason == .timeout {
            attemptFailed(index, reason: .timeout, report: report)
        } else if report.status == .cancelled {
            enqueueFinish(index, .cancelled, .cancelRequested, report: report)
        } else {
            attemptFailed(index, reason: report.reason, report: report)
        }
        settle()
        return true
    }

    /// The index of `operation` if `attempt` is its current one and `worker` holds it.
    func current(_ operation: OperationID, attempt: Int, worker: Int) -> Int? {
        guard let index = index(of: operation),
              operations[index].state == .dispatched || operations[index].state == .executing,
              Int(operations[index].attempt) == attempt, operations[index].worker == Int32(worker) else { return nil }
        return index
    }

    /// Time passes: workers not heard from within `workerTimeout` are lost (fenced), retries whose backoff
    /// elapsed become ready, attempts past their timeout are killed, and the attempts of lost workers
    /// whose lease margin is over go back to `ready`.
    public mutating func tick(at time: Timestamp) {
        now = time
        for worker in liveWorkers where workers[worker].lastSeen + configuration.workerTimeout <= time {
            fence(worker)
        }
        while let timer = timers.min, timer.deadline <= time {
            _ = timers.removeMin()
            let index = Int(timer.index)
            guard operations[index].attempt == timer.attempt else { continue }
            switch timer.kind {
            case .retry:
                guard operations[index].isWaitingForRetry, operations[index].state == .pending else { continue }
                operations[index].isWaitingForRetry = false
                if operations[index].unfinishedDependencies == 0 { makeReady(index) }
            case .timeout:
                guard operations[index].state == .executing, operations[index].killReason == nil else { continue }
                operations[index].killReason = .timeout
                effects.append(.kill(id(index), attempt: Int(timer.attempt),
                                     worker: workers[Int(operations[index].worker)].id, reason: .timeout))
            case .lease:
                let state = operations[index].state
                guard state == .dispatched || state == .executing, workers[Int(operations[index].worker)].isFenced else { continue }
                requeue(index, lost: true)
            }
        }
        settle()
    }

    /// The earliest time at which ``tick(at:)`` has something to do, or nil: the shell's poll timeout.
    public var nextDeadline: Timestamp? {
        let workerDeadline = liveWorkers.map { workers[$0].lastSeen + configuration.workerTimeout }.min()
        switch (timers.min?.deadline, workerDeadline) {
        case let (a?, b?): return min(a, b)
        case let (a?, nil): return a
        case let (nil, b): return b
        }
    }
}
