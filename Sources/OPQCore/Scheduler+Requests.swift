/// Client requests other than submission: cancel, queue settings, priority, dependency edits.
/// Each is validated first; a refused request changes nothing (SEMANTICS §9).
extension Scheduler {
    /// Carries out what the event set in motion: pending finishes and cascades, then dispatch.
    mutating func settle() {
        drainFinishes()
        pump()
    }

    // MARK: - Cancel (SEMANTICS §5)

    /// Cancels one operation. Not started → finished `cancelled` at once; dispatched or executing → the
    /// worker is told (it finishes when the worker reports); finished → nothing changes.
    /// Returns what the cancel covered (the operation; journaled as such, whatever its state).
    ///
    /// An open reservation (``reserve(_:at:)``) is given up: it counts as an operation that finished
    /// `cancelled`, and a later submission under it is refused (see ``Reservations``).
    @discardableResult
    public mutating func cancel(_ operation: OperationID, at time: Timestamp) throws(RequestError) -> [OperationID] {
        now = time
        if let number = openReservation(operation) {
            effects.append(.journal(.cancelled([operation])))
            giveUp(number)
            return [operation]
        }
        guard let index = index(of: operation) else { throw .unknownOperation(operation) }
        effects.append(.journal(.cancelled([operation])))
        cancelOne(index)
        settle()
        return [operation]
    }

    /// Cancels every operation of `job` unfinished at this moment, barriers included, and returns them.
    @discardableResult
    public mutating func cancel(job: JobID, at time: Timestamp) throws(RequestError) -> [OperationID] {
        now = time
        guard let index = index(of: job) else { throw .unknownJob(job) }
        let record = jobs[index]
        return cancelAll((record.first..<record.first + record.count).filter { operations[$0].state != .finished })
    }

    /// Foundation's `cancelAllOperations()`: cancels every operation of `queue` unfinished at this
    /// moment, barriers included; operations added afterwards are not affected. Returns them.
    @discardableResult
    public mutating func cancelAll(inQueue queue: String, at time: Timestamp) throws(RequestError) -> [OperationID] {
        now = time
        guard let queue = queueIndex[queue] else { throw .unknownQueue(queue) }
        return cancelAll(queues[queue].members.filter { operations[$0].state != .finished })
    }

    /// Cancels the operations of `snapshot` (all unfinished now) as one journaled cancel; returns their ids.
    @discardableResult
    mutating func cancelAll(_ snapshot: [Int]) -> [OperationID] {
        guard !snapshot.isEmpty else { return [] }
        let cancelled = snapshot.map(id)
        effects.append(.journal(.cancelled(cancelled)))
        // Every not-started operation of the snapshot is marked before any of them finishes, so none is
        // released (and, if empty, run to success) by the cancel of one before it in the snapshot (§5).
        for index in snapshot where operations[index].state <= .ready {
            enqueueFinish(index, .cancelled, .cancelRequested)
        }
        for index in snapshot where operations[index].state > .ready { cancelOne(index) }
        settle()
        return cancelled
    }

    mutating func cancelOne(_ index: Int) {
        switch operations[index].state {
        case .finished:
            return
        case .pending, .ready:
            enqueueFinish(index, .cancelled, .cancelRequested)
            drainFinishes()
        case .dispatched, .executing:
            guard !operations[index].isCancelled else { return }
            operations[index].isCancelled = true
            notify(index)  // watchers see isCancelled now, not only at the finish
            if operations[index].killReason == nil {
                operations[index].killReason = .cancel
                // A recovering worker (not registered yet) is told when it registers.
                let worker = Int(operations[index].worker)
                if workers[worker].isAlive {
                    effects.append(.kill(id(index), attempt: Int(operations[index].attempt), worker: workers[worker].id, reason: .cancel))
                }
            }
        }
    }

    // MARK: - Queues (SEMANTICS §4)

    /// Changes a queue's `maxConcurrentOperationCount` and/or suspension, creating the queue if new.
    /// Lowering the maximum never stops running operations; raising it or resuming dispatches at once.
    public mutating func configure(queue name: String, _ settings: QueueSettings, at time: Timestamp) throws(RequestError) {
        now = time
        if let max = settings.maxConcurrent, max < -1 { throw .invalidMaxConcurrent(queue: name, value: max) }
        applySettings(settings, to: queue(named: name))
        settle()
    }

    /// Suspends (`true`) or resumes (`false`) a queue.
    public mutating func setSuspended(_ suspended: Bool, queue name: String, at time: Timestamp) {
        try! configure(queue: name, QueueSettings(isSuspended: suspended), at: time)
    }

    /// Sets a queue's `maxConcurrentOperationCount` (-1, 0 or positive).
    public mutating func setMaxConcurrent(_ max: Int, queue name: String, at time: Timestamp) throws(RequestError) {
        try configure(queue: name, QueueSettings(maxConcurrent: max), at: time)
    }

    mutating func applySettings(_ settings: QueueSettings, to queue: Int) {
        if let max = settings.maxConcurrent { queues[queue].maxConcurrent = max }
        if let suspended = settings.isSuspended { queues[queue].isSuspended = suspended }
        effects.append(.journal(.queueSettings(queue: queues[queue].name, maxConcurrent: queues[queue].maxConcurrent,
                                               isSuspended: queues[queue].isSuspended)))
        releaseHeldEmpties(queue)
    }

    // MARK: - Priority (SEMANTICS §4.5)

    /// Changes an operation's priority. A queued operation moves to the back of its new level; setting
    /// the level it already has changes nothing; for a started or finished one it is only recorded.
    /// - Complexity: O(log n).
    public mutating func setPriority(_ priority: QueuePriority, of operation: OperationID, at time: Timestamp) throws(RequestError) {
        now = time
        guard let index = index(of: operation) else { throw .unknownOperation(operation) }
        guard operations[index].priority != priority else { return }
        effects.append(.journal(.priority(operation, priority)))
        operations[index].priority = priority
        switch operations[index].state {
        case .pending:
            operations[index].sequence = nextSequence
            nextSequence += 1
        case .ready:
            operations[index].sequence = nextSequence
            nextSequence += 1
            if !operations[index].work.isEmpty {
                leaveReady(index)
                pushReady(index)
            }
        case .dispatched, .executing, .finished:
            break
        }
        settle()
    }

    // MARK: - Dependencies (SEMANTICS §3)

    /// Makes `operation` depend on `dependency`. A pending or ready operation waits again; once
    /// dispatched, nothing changes (returns false). A dependency already present is ignored.
    /// Refused if it would close a cycle.
    ///
    /// `dependency` may be an open reservation (``reserve(_:at:)``): a forward edge onto the operation to
    /// be submitted under it, which cannot close a cycle yet (the submission that takes it up is checked).
    /// - Complexity: O(unfinished ancestors of `dependency`) for the cycle check.
    @discardableResult
    public mutating func addDependency(_ operation: OperationID, on dependency: OperationID, at time: Timestamp) throws(RequestError) -> Bool {
        now = time
        guard let index = index(of: operation) else { throw .unknownOperation(operation) }
        if dependency.isReservation {
            guard let number = openReservation(dependency) else { throw .unknownOperation(dependency) }
            return changeForwardEdge(index, on: dependency, number: number, adding: true)
        }
        guard let target = self.index(of: dependency) else { throw .unknownOperation(dependency) }
        guard operations[index].state <= .ready else { return false }
        if operations[index].dependencies.contains(Edge(target, implicit: false)) { return false }
        if operations[target].state != .finished, let cycle = path(from: target, to: index) {
            // `cycle` runs from `operation` up to `dependency`; the new edge closes it.
            throw .cycle(([index] + cycle.reversed().dropLast()).map(id))
        }
        effects.append(.journal(.dependency(operation, on: dependency, added: true)))
        link(index, to: target, implicit: false)
        if operations[target].state != .finished {
            if operations[index].state == .ready {
                leaveReady(index)
                setState(index, .pending)
                notify(index)
            }
        } else if operations[target].outcome != .succeeded, operations[index].requires == .success {
            enqueueFinish(index, .cancelled, .dependencyFailed)
        }
        settle()
        return true
    }

    /// Removes the dependency of `operation` on `dependency` (added by the submitter; barrier edges stay).
    /// An operation whose last unfinished dependency goes becomes ready — Apple's documented rule.
    @discardableResult
    public mutating func removeDependency(_ operation: OperationID, on dependency: OperationID, at time: Timestamp) throws(RequestError) -> Bool {
        now = time
        guard let index = index(of: operation) else { throw .unknownOperation(operation) }
        if dependency.isReservation {
            guard let number = openReservation(dependency) else { throw .unknownOperation(dependency) }
            return changeForwardEdge(index, on: dependency, number: number, adding: false)
        }
        guard let target = self.index(of: dependency) else { throw .unknownOperation(dependency) }
        let edge = Edge(target, implicit: false)
        guard operations[index].dependencies.contains(edge) else { return false }
        effects.append(.journal(.dependency(operation, on: dependency, added: false)))
        operations[index].dependencies.removeFirst(edge)
        operations[target].dependants.removeFirst(Edge(index, implicit: false))
        if operations[target].state != .finished, operations[index].state == .pending {
            operations[index].unfinishedDependencies -= 1
            if operations[index].unfinishedDependencies == 0, !operations[index].isWaitingForRetry, !operations[index].isCancelled {
                makeReady(index)
            }
        }
        settle()
        return true
    }

    /// A dependency path from `start` to `goal` through unfinished operations (`start` first), or nil.
    func path(from start: Int, to goal: Int) -> [Int]? {
        var parent = [start: start]
        var stack = [start]
        while let node = stack.popLast() {
            if node == goal {
                var path = [goal]
                while path.last != start { path.append(parent[path.last!]!) }
                return path
            }
            for edge in operations[node].dependencies where parent[edge.index] == nil && operations[edge.index].state != .finished {
                parent[edge.index] = node
                stack.append(edge.index)
            }
        }
        return nil
    }
}
