import OPQCore

/// A deliberately simple reference model of the scheduling core, written from SEMANTICS.md and the
/// core's public API documentation — never from its internals.
///
/// Everything is brute force: readiness is recomputed by scanning every dependency, cascades run as a
/// fixpoint loop, and each dispatch sorts every ready operation. It makes the same documented policy
/// decisions as the core (dispatch order, worker choice, backoff, loss limits) so that states compare exactly.
struct ReferenceModel {
    struct Op {
        let id: Int
        let name: String
        let job: Int
        let queue: String
        let isEmpty: Bool
        let isBarrier: Bool
        let requires: Requirement
        let timeout: Double?
        let labels: [String: String]
        var priority: QueuePriority
        var sequence: UInt64
        var retriesLeft: Int
        /// Explicit dependencies (ids), in the order they were added.
        var explicit: [Int]
        /// Barrier dependencies (ids): satisfied by any outcome.
        var implicit: [Int]
        var state = OperationState.pending
        var outcome: Outcome?
        var isCancelled = false
        var attempt = 0
        var worker: WorkerID?
        var killReason: KillReason?
        var lostWorkers = 0
        /// Pending for a retry until this time.
        var retryAt: Double?
        /// The timeout of the attempt that started, armed by `started`.
        var timeoutAt: Double?
        /// Held by a lost worker until its lease has surely run out at this time (then requeued).
        var fencedUntil: Double?
    }

    struct Queue {
        let name: String
        var maxConcurrent = -1
        var isSuspended = false
        var isRunning: Bool { !isSuspended && maxConcurrent != 0 }
    }

    struct Worker {
        let id: WorkerID
        var slots: Int
        var queues: Set<String>?
        var labels: [String: String]
        var lastSeen: Double
    }

    /// Answer to a dependency edit.
    enum EditResult: Equatable { case unknown, cycle, ignored, done }

    let configuration: Scheduler.Configuration
    var ops: [Op] = []
    /// Operation ids of each job, in batch order.
    var jobs: [[Int]] = []
    /// Queues in creation order.
    var queues: [Queue] = []
    /// Live workers in join order.
    var workers: [Worker] = []
    var nextSequence: UInt64 = 0
    var now: Double = 0
    /// Kills asked for by the last event.
    var kills: [String] = []
    /// Open reservations by number: the operations with a forward edge onto each (ReferenceModel+Reservations).
    var reservations: [Int: [Int]] = [:]
    /// Reservations handed out so far.
    var handedOut = 0

    init(configuration: Scheduler.Configuration) { self.configuration = configuration }

    // MARK: - Lookups

    func op(_ id: Int) -> Op { ops[id - 1] }
    func isKnown(_ id: Int) -> Bool { id >= 1 && id <= ops.count }
    func isFinished(_ id: Int) -> Bool { ops[id - 1].state == .finished }
    func queue(_ name: String) -> Queue? { queues.first { $0.name == name } }
    func isHeld(_ op: Op) -> Bool { op.state == .dispatched || op.state == .executing }
    func liveWorker(_ id: WorkerID) -> Int? { workers.firstIndex { $0.id == id } }
    /// Held by the live worker `worker` (not by a lost worker of the same name whose lease runs out).
    func isHeld(_ op: Op, by worker: WorkerID) -> Bool { isHeld(op) && op.worker == worker && op.fencedUntil == nil }
    func heldCount(_ worker: WorkerID) -> Int { ops.filter { isHeld($0, by: worker) }.count }

    mutating func ensureQueue(_ name: String) -> Int {
        if let q = queues.firstIndex(where: { $0.name == name }) { return q }
        queues.append(Queue(name: name))
        return queues.count - 1
    }

    mutating func kill(_ index: Int, _ reason: KillReason) {
        kills.append("kill \(ops[index].id)#\(ops[index].attempt)@\(ops[index].worker!) \(reason)")
    }

    // MARK: - Submission

    /// Accepts the whole submission (returning its ids) or nothing (nil).
    mutating func submit(_ submission: Submission) -> [Int]? {
        let specs = submission.operations
        if specs.isEmpty { return nil }
        if submission.queueSettings.contains(where: { ($0.settings.maxConcurrent ?? -1) < -1 }) { return nil }
        for spec in specs {
            if spec.queue.isEmpty || spec.retries < 0 { return nil }
            if let t = spec.timeout, !(t > 0 && t.isFinite) { return nil }
            if case .command(let c) = spec.work, c.argv.first?.isEmpty ?? true { return nil }
        }
        let names = specs.map(\.name).filter { !$0.isEmpty }
        if Set(names).count != names.count { return nil }
        let base = ops.count
        // Reservations taken up (number → batch position) and forward edges (position, number).
        var taking: [Int: Int] = [:]
        for (k, spec) in specs.enumerated() {
            guard let reservation = spec.reservation else { continue }
            let number = Int(reservation.rawValue - OperationID.reservationBase)
            guard reservation.isReservation, reservations[number] != nil, taking[number] == nil else { return nil }
            taking[number] = k
        }
        var forward: [(Int, Int)] = []
        var explicit: [[Int]] = []
        for (k, spec) in specs.enumerated() {
            var deps: [Int] = []
            for reference in spec.dependencies {
                let target: Int
                switch reference {
                case .name(let name):
                    guard let k = specs.firstIndex(where: { $0.name == name && !name.isEmpty }) else { return nil }
                    target = base + k + 1
                case .id(let id) where id.isReservation:
                    let number = Int(id.rawValue - OperationID.reservationBase)
                    guard reservations[number] != nil else { return nil }
                    guard let j = taking[number] else {
                        if !forward.contains(where: { $0 == (k, number) }) { forward.append((k, number)) }
                        continue
                    }
                    target = base + j + 1
                case .id(let id):
                    guard isKnown(Int(id.rawValue)) else { return nil }
                    target = Int(id.rawValue)
                }
                if !deps.contains(target) { deps.append(target) }
            }
            explicit.append(deps)
        }
        // Barrier edges, from the state before the batch plus the batch's earlier operations.
        var implicit: [[Int]] = []
        for (k, spec) in specs.enumerated() {
            let earlierExisting = ops.filter { $0.queue == spec.queue && $0.state != .finished }
            let earlierInBatch = (0..<k).filter { specs[$0].queue == spec.queue }
            if spec.isBarrier {
                implicit.append(earlierExisting.map(\.id) + earlierInBatch.map { base + $0 + 1 })
            } else {
                implicit.append(earlierExisting.filter(\.isBarrier).map(\.id)
                    + earlierInBatch.filter { specs[$0].isBarrier }.map { base + $0 + 1 })
            }
        }
        // Cycle: repeatedly strike batch operations whose batch dependencies are all struck.
        var struck = Set<Int>()
        var progress = true
        while progress {
            progress = false
            for k in specs.indices where !struck.contains(k) {
                let inBatch = (explicit[k] + implicit[k]).filter { $0 > base }.map { $0 - base - 1 }
                if inBatch.allSatisfy(struck.contains) {
                    struck.insert(k)
                    progress = true
                }
            }
        }
        if struck.count != specs.count { return nil }
        var trial = self
        trial.accept(submission, explicit: explicit, implicit: implicit, taking: taking, forward: forward)
        if trial.hasCycle() { return nil }
        self = trial
        for (k, spec) in specs.enumerated() where spec.isCancelled { finish(base + k, .cancelled) }
        settle()
        return jobs.last
    }

    /// Puts a checked submission in place (see ``submit(_:)``).
    mutating func accept(_ submission: Submission, explicit: [[Int]], implicit: [[Int]], taking: [Int: Int], forward: [(Int, Int)]) {
        let specs = submission.operations
        let base = ops.count
        for (name, settings) in submission.queueSettings {
            let q = ensureQueue(name)
            if let max = settings.maxConcurrent { queues[q].maxConcurrent = max }
            if let suspended = settings.isSuspended { queues[q].isSuspended = suspended }
        }
        let job = jobs.count + 1
        for (k, spec) in specs.enumerated() {
            _ = ensureQueue(spec.queue)
            ops.append(Op(
                id: base + k + 1, name: spec.name, job: job, queue: spec.queue, isEmpty: spec.work.isEmpty,
                isBarrier: spec.isBarrier, requires: spec.requires, timeout: spec.timeout, labels: spec.labels,
                priority: spec.priority, sequence: nextSequence, retriesLeft: spec.retries,
                explicit: explicit[k], implicit: implicit[k]))
            nextSequence += 1
        }
        jobs.append(Array(base + 1...base + specs.count))
        for (number, k) in taking.sorted(by: { $0.value < $1.value }) {
            for d in reservations.removeValue(forKey: number)! where ops[d - 1].state <= .ready {
                ops[d - 1].explicit.append(base + k + 1)
            }
        }
        for (k, number) in forward { reservations[number]!.append(base + k + 1) }
    }

    // MARK: - Requests

    mutating func cancel(_ id: Int) -> Bool {
        guard isKnown(id) else { return false }
        requestCancel(id - 1)
        settle()
        return true
    }

    /// Cancels every operation of the job (or queue) unfinished at this moment, all at once.
    mutating func cancel(ids: [Int]) {
        let snapshot = ids.filter { !isFinished($0) }
        for id in snapshot { requestCancel(id - 1) }
        if !snapshot.isEmpty { settle() }
    }

    mutating func requestCancel(_ i: Int) {
        switch ops[i].state {
        case .finished: return
        case .pending, .ready: finish(i, .cancelled)
        case .dispatched, .executing:
            guard !ops[i].isCancelled else { return }
            ops[i].isCancelled = true
            if ops[i].killReason == nil {
                ops[i].killReason = .cancel
                if ops[i].fencedUntil == nil { kill(i, .cancel) }  // a lost worker is not told
            }
        }
    }

    mutating func configure(_ name: String, maxConcurrent: Int? = nil, suspended: Bool? = nil) -> Bool {
        if let max = maxConcurrent, max < -1 { return false }
        let q = ensureQueue(name)
        if let max = maxConcurrent { queues[q].maxConcurrent = max }
        if let suspended { queues[q].isSuspended = suspended }
        settle()
        return true
    }

    mutating func setPriority(_ priority: QueuePriority, of id: Int) -> Bool {
        guard isKnown(id) else { return false }
        let i = id - 1
        guard ops[i].priority != priority else { return true }
        ops[i].priority = priority
        if ops[i].state == .pending || ops[i].state == .ready {
            ops[i].sequence = nextSequence
            nextSequence += 1
        }
        settle()
        return true
    }

    /// Can `goal` be reached from `start` along dependency edges through unfinished operations?
    func reaches(from start: Int, to goal: Int) -> Bool {
        var seen: Set<Int> = [start]
        var frontier = [start]
        while let id = frontier.popLast() {
            if id == goal { return true }
            for dep in op(id).explicit + op(id).implicit where !isFinished(dep) && !seen.contains(dep) {
                seen.insert(dep)
                frontier.append(dep)
            }
        }
        return false
    }

    mutating func addDependency(_ id: Int, on target: Int) -> EditResult {
        guard isKnown(id), isKnown(target) else { return .unknown }
        let i = id - 1
        guard ops[i].state <= .ready, !ops[i].explicit.contains(target) else { return .ignored }
        if !isFinished(target), reaches(from: target, to: id) { return .cycle }
        ops[i].explicit.append(target)
        if !isFinished(target), ops[i].state == .ready { ops[i].state = .pending }
        settle()
        return .done
    }

    mutating func removeDependency(_ id: Int, on target: Int) -> EditResult {
        guard isKnown(id), isKnown(target) else { return .unknown }
        guard let position = ops[id - 1].explicit.firstIndex(of: target) else { return .ignored }
        ops[id - 1].explicit.remove(at: position)
        settle()
        return .done
    }

    // MARK: - Transitions

    mutating func finish(_ i: Int, _ outcome: Outcome) {
        ops[i].state = .finished
        ops[i].outcome = outcome
        ops[i].worker = nil
        ops[i].retryAt = nil
        if outcome == .cancelled { ops[i].isCancelled = true }
    }

    /// A failed attempt: retried after backoff while retries are left (and it was not cancelled).
    mutating func attemptFailed(_ i: Int) {
        guard ops[i].retriesLeft > 0, !ops[i].isCancelled else { return finish(i, .failed) }
        ops[i].retriesLeft -= 1
        ops[i].state = .pending
        ops[i].worker = nil
        ops[i].killReason = nil
        let backoff = configuration.retryBackoff * Double(1 << min(ops[i].attempt - 1, 30))
        ops[i].retryAt = now + min(backoff, configuration.maxRetryBackoff)
    }

    /// Cascades to a fixpoint (cancel futile `requires: success` operations, release ready ones,
    /// finish empty ones whose queue runs), then dispatches.
    mutating func settle() {
        var changed = true
        while changed {
            changed = false
            // Finishes within one pass are seen by the next pass.
            let finished = ops.map { $0.state == .finished }
            let futile = ops.map { $0.state == .finished && $0.outcome != .succeeded }
            let awaiting = Set(reservations.values.joined())
            for i in ops.indices where ops[i].state == .pending || ops[i].state == .ready {
                if ops[i].requires == .success, ops[i].explicit.contains(where: { futile[$0 - 1] }) {
                    finish(i, .cancelled)
                    changed = true
                    continue
                }
                if ops[i].state == .pending, ops[i].retryAt == nil, !awaiting.contains(ops[i].id),
                   ops[i].explicit.allSatisfy({ finished[$0 - 1] }), ops[i].implicit.allSatisfy({ finished[$0 - 1] }) {
                    ops[i].state = .ready
                    changed = true
                }
                if ops[i].state == .ready, ops[i].isEmpty, queue(ops[i].queue)!.isRunning {
                    finish(i, .succeeded)
                    changed = true
                }
            }
        }
        pump()
    }

    func freeSlots(_ worker: Worker) -> Int { max(0, worker.slots - heldCount(worker.id)) }

    func serves(_ worker: Worker, _ queue: String) -> Bool { worker.queues?.contains(queue) ?? true }

    /// Dispatch: the best ready operation (priority, then sequence) over running queues under their
    /// maximum that some worker can take, to the capable worker with the most free slots.
    mutating func pump() {
        while true {
            var active: [String: Int] = [:]
            var held: [WorkerID: Int] = [:]
            for o in ops where isHeld(o) {
                active[o.queue, default: 0] += 1
                if o.fencedUntil == nil { held[o.worker!, default: 0] += 1 }
            }
            let candidates = ops.indices.filter { i in
                let q = queue(ops[i].queue)!
                return ops[i].state == .ready && !ops[i].isEmpty && q.isRunning
                    && (q.maxConcurrent < 0 || active[q.name, default: 0] < q.maxConcurrent)
            }.sorted { a, b in
                (ops[a].priority, ops[b].sequence) > (ops[b].priority, ops[a].sequence)
            }
            var placed = false
            for i in candidates {
                var best: Int?
                for (w, worker) in workers.enumerated() {
                    let free = max(0, worker.slots - held[worker.id, default: 0])
                    guard free > 0, serves(worker, ops[i].queue),
                          ops[i].labels.allSatisfy({ worker.labels[$0.key] == $0.value }) else { continue }
                    if best == nil || free > max(0, workers[best!].slots - held[workers[best!].id, default: 0]) { best = w }
                }
                if let best {
                    ops[i].attempt += 1
                    ops[i].state = .dispatched
                    ops[i].worker = workers[best].id
                    ops[i].killReason = nil
                    ops[i].timeoutAt = nil
                    placed = true
                    break
                }
            }
            if !placed { return }
        }
    }
}
