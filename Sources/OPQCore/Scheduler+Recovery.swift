/// Recovery from the journal (SEMANTICS §10): the shell replays what it journaled, in journal order,
/// into a fresh core before any worker joins.
///
/// Client requests (submissions, cancels, queue settings, priorities, dependency edits) are replayed
/// through the ordinary methods: the core is deterministic, so they give the same ids, sequence numbers
/// and cascades as the first time. What workers caused is replayed as its recorded result, not re-derived:
/// an attempt given to a worker (``restoreAttempt(_:attempt:worker:)``), an attempt that failed and waits
/// for a retry, an attempt requeued after its worker went away, and every finish.
///
/// An attempt that was dispatched or executing when the journal ends stays held by a *recovering* worker:
/// a record under the worker's id that is not live (no slots, never dispatched to). When that worker
/// registers again, ``workerJoined(_:slots:queues:labels:holding:at:)`` reconciles as for any reconnect —
/// what it still holds stays its own, what it no longer holds gets a new attempt. ``endRecovery(at:)``
/// (the shell's grace period) gives a new attempt to whatever recovering workers still hold.
extension Scheduler {
    /// Replays one journaled record (the one path for every record the core emits): a client request
    /// through its ordinary method, what a worker caused as its recorded result. Returns the receipt a
    /// replayed submission got (the journal checks it against the one it recorded), else nil. Throws the
    /// core's refusal (a ``SubmissionError`` or ``RequestError``) of a record that does not apply.
    @discardableResult
    public mutating func replay(_ record: JournalRecord, at time: Timestamp) throws -> SubmissionReceipt? {
        switch record {
        case let .submitted(_, submission):
            return try submit(submission, at: time)
        case .cancelled(let ids):
            try restoreCancel(ids, at: time)
        case let .queueSettings(queue, max, suspended):
            try configure(queue: queue, QueueSettings(maxConcurrent: max, isSuspended: suspended), at: time)
        case let .priority(id, priority):
            try setPriority(priority, of: id, at: time)
        case let .dependency(id, on, added):
            if added { try addDependency(id, on: on, at: time) } else { try removeDependency(id, on: on, at: time) }
        case let .reserved(first, count):
            let ids = try reserve(count, at: time)
            guard ids.first == first else { throw RequestError.unknownOperation(first) }
        case let .attempt(id, attempt, worker), let .adopted(id, attempt, worker):
            try restoreAttempt(id, attempt: attempt, worker: worker, at: time)
        case let .retry(id, reason):
            try restoreRetry(id, reason: reason, at: time)
        case .requeue(let id):
            try restoreRequeue(id, at: time)
        case let .finished(id, outcome, reason, _):
            try restoreFinish(id, outcome: outcome, reason: reason, at: time)
        }
        return nil
    }

    /// Replays a journaled cancel of `operations`: one operation as by ``cancel(_:at:)``, several as the
    /// snapshot of a job's or queue's cancel-all.
    public mutating func restoreCancel(_ operations: [OperationID], at time: Timestamp) throws(RequestError) {
        now = time
        if operations.count == 1 {
            try cancel(operations[0], at: time)
            return
        }
        var snapshot: [Int] = []
        snapshot.reserveCapacity(operations.count)
        for operation in operations {
            guard let index = index(of: operation) else { throw .unknownOperation(operation) }
            snapshot.append(index)
        }
        cancelAll(snapshot)
    }

    /// Replays "attempt `attempt` of `operation` went to `worker`" (a dispatch, or an adoption after a
    /// reconnect). The operation leaves `ready` (or a retry's wait) and is held by `worker`, which is a
    /// recovering worker unless it already registered with this core.
    public mutating func restoreAttempt(_ operation: OperationID, attempt: Int, worker id: WorkerID, at time: Timestamp) throws(RequestError) {
        now = time
        guard let index = index(of: operation) else { throw .unknownOperation(operation) }
        switch operations[index].state {
        case .finished:
            return
        case .dispatched, .executing:
            releaseSlot(index)
        case .ready:
            leaveReady(index)
        case .pending:
            operations[index].isWaitingForRetry = false
        }
        let worker = workerIndex[id] ?? recoveringWorker(id)
        queues[Int(operations[index].queue)].active += 1
        takeSlot(of: worker, for: index)
        operations[index].attempt = UInt32(clamping: attempt)
        operations[index].killReason = nil
        setState(index, .dispatched)
    }

    /// Replays "the attempt of `operation` failed and waits for a retry".
    public mutating func restoreRetry(_ operation: OperationID, reason: FinishReason, at time: Timestamp) throws(RequestError) {
        now = time
        guard let index = index(of: operation) else { throw .unknownOperation(operation) }
        guard operations[index].state == .dispatched || operations[index].state == .executing else { return }
        attemptFailed(index, reason: reason, report: nil)
        drainFinishes()
    }

    /// Replays "the attempt of `operation` went back to `ready` because its worker left or was lost".
    /// The lost-worker count is not replayed (it only ever stops an operation early).
    public mutating func restoreRequeue(_ operation: OperationID, at time: Timestamp) throws(RequestError) {
        now = time
        guard let index = index(of: operation) else { throw .unknownOperation(operation) }
        guard operations[index].state == .dispatched || operations[index].state == .executing else { return }
        requeue(index, lost: false)
    }

    /// Replays a finish of `operation`; nothing happens if the replay already finished it (an empty
    /// operation, a cascade).
    public mutating func restoreFinish(_ operation: OperationID, outcome: Outcome, reason: FinishReason, at time: Timestamp) throws(RequestError) {
        now = time
        guard let index = index(of: operation) else { throw .unknownOperation(operation) }
        guard operations[index].state != .finished else { return }
        enqueueFinish(index, outcome, reason)
        drainFinishes()
    }

    /// Operations held by recovering workers (dispatched or executing when the journal ended).
    public var recoveringAttempts: Int {
        workerIndex.values.reduce(0) { $0 + (workers[$1].isAlive ? 0 : workers[$1].held.count) }
    }

    /// The grace period is over: every attempt still held by a recovering worker gets a new attempt
    /// (without counting a lost worker), and those workers are forgotten.
    public mutating func endRecovery(at time: Timestamp) {
        now = time
        for worker in workerIndex.values.sorted() where !workers[worker].isAlive {
            remove(worker, lost: false)
        }
        settle()
    }

    /// A not-live worker record under `id` that holds recovered attempts until the worker registers.
    mutating func recoveringWorker(_ id: WorkerID) -> Int {
        let worker = workers.count
        var record = WorkerRecord(id: id, slots: 0, labels: [:], lastSeen: now)
        record.isAlive = false
        record.servesQueue = queues.map { _ in true }
        record.fitsPlacement = placements.map { _ in true }
        workers.append(record)
        workerIndex[id] = worker
        return worker
    }
}
