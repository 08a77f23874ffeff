import OPQCore

/// The reference model's worker events: joins and reconciliation, departures and losses, reports, time.
extension ReferenceModel {
    mutating func workerJoined(_ id: WorkerID, slots: Int, queues filter: Set<String>?, labels: [String: String],
                               holding: [Scheduler.HeldAttempt]) {
        let w: Int
        if let existing = liveWorker(id) {
            w = existing
            workers[w].slots = max(0, slots)
        } else {
            workers.append(Worker(id: id, slots: max(0, slots), queues: filter, labels: labels, lastSeen: now))
            w = workers.count - 1
        }
        workers[w].queues = filter
        workers[w].labels = labels
        workers[w].lastSeen = now
        var reported: [Int: Int] = [:]
        for held in holding where reported[Int(held.operation.rawValue)] == nil {
            reported[Int(held.operation.rawValue)] = held.attempt
        }
        for i in ops.indices where isHeld(ops[i], by: id) && reported[ops[i].id] != ops[i].attempt {
            requeue(i, lost: true)
        }
        for held in holding {
            let opID = Int(held.operation.rawValue)
            guard isKnown(opID) else { continue }
            let i = opID - 1
            if isHeld(ops[i], by: id), ops[i].attempt == held.attempt { continue }
            if ops[i].state == .ready, ops[i].attempt == held.attempt, !ops[i].isEmpty,
               freeSlots(workers[liveWorker(id)!]) > 0, serves(workers[liveWorker(id)!], ops[i].queue) {
                ops[i].state = .executing  // adopted: the attempt still runs there
                ops[i].worker = id
            } else {
                kills.append("kill \(opID)#\(held.attempt)@\(id) stale")
            }
        }
        settle()
    }

    mutating func workerGone(_ id: WorkerID, lost: Bool) {
        guard let w = liveWorker(id) else { return }
        remove(w, lost: lost)
        settle()
    }

    /// A worker leaves (its attempts go back at once) or is lost (they stay on it, fenced, until the
    /// lease margin is over: SEMANTICS §7, leases).
    mutating func remove(_ w: Int, lost: Bool) {
        let worker = workers.remove(at: w)
        let id = worker.id
        for i in ops.indices where isHeld(ops[i], by: id) {
            if lost, configuration.leaseMargin > 0 {
                // Its lease may run until last heard + timeout (it may be lost early: a broken connection).
                ops[i].fencedUntil = max(now, worker.lastSeen + configuration.workerTimeout) + configuration.leaseMargin
            } else {
                requeue(i, lost: lost)
            }
        }
    }

    /// The attempt of operation `i` is gone with its worker.
    mutating func requeue(_ i: Int, lost: Bool) {
        ops[i].fencedUntil = nil
        if ops[i].isCancelled { return finish(i, .cancelled) }
        if ops[i].killReason == .timeout { return attemptFailed(i) }
        if lost { ops[i].lostWorkers += 1 }
        if ops[i].lostWorkers >= configuration.maxLostWorkers { return finish(i, .failed) }
        ops[i].state = .ready
        ops[i].worker = nil
        ops[i].killReason = nil
    }

    mutating func heartbeat(_ id: WorkerID) {
        if let w = liveWorker(id) { workers[w].lastSeen = now }
    }

    func current(_ id: Int, attempt: Int, worker: WorkerID) -> Int? {
        guard isKnown(id), isHeld(op(id), by: worker), op(id).attempt == attempt else { return nil }
        return id - 1
    }

    mutating func started(_ id: Int, attempt: Int, worker: WorkerID) -> Bool {
        guard let w = liveWorker(worker) else { return false }
        workers[w].lastSeen = now
        guard let i = current(id, attempt: attempt, worker: worker), ops[i].state == .dispatched else { return false }
        ops[i].state = .executing
        ops[i].timeoutAt = ops[i].timeout.map { now + $0 }
        return true
    }

    mutating func finished(_ id: Int, attempt: Int, worker: WorkerID, _ report: AttemptReport) -> Bool {
        guard let w = liveWorker(worker) else { return false }
        workers[w].lastSeen = now
        guard let i = current(id, attempt: attempt, worker: worker) else { return false }
        if report.status == .succeeded {
            finish(i, .succeeded)
        } else if ops[i].isCancelled {
            finish(i, .cancelled)
        } else if ops[i].killReason == .timeout {
            attemptFailed(i)
        } else if report.status == .cancelled {
            finish(i, .cancelled)
        } else {
            attemptFailed(i)
        }
        settle()
        return true
    }

    mutating func tick(to time: Double) {
        now = time
        while let w = workers.firstIndex(where: { $0.lastSeen + configuration.workerTimeout <= now }) {
            remove(w, lost: true)
        }
        for i in ops.indices {
            if let at = ops[i].retryAt, at <= now, ops[i].state == .pending { ops[i].retryAt = nil }
            // The core fires timers by deadline (a timeout before a lease on a tie).
            if let until = ops[i].fencedUntil, until <= now, until < ops[i].timeoutAt ?? .infinity { requeue(i, lost: true) }
            if let at = ops[i].timeoutAt, at <= now {
                ops[i].timeoutAt = nil
                if ops[i].state == .executing, ops[i].killReason == nil {
                    ops[i].killReason = .timeout
                    kill(i, .timeout)
                }
            }
            if let until = ops[i].fencedUntil, until <= now { requeue(i, lost: true) }
        }
        settle()
    }
}
