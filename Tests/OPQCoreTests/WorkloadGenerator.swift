import OPQCore

/// OPQCore's SplitMix64 with a scrambled seed, so a seed reproduces a workload exactly.
struct SeededGenerator: RandomNumberGenerator {
    private var base: SplitMix64

    init(seed: UInt64) {
        var first = SplitMix64(seed: seed)
        base = SplitMix64(seed: first.next() ^ 0x5DEE_CE66_D1CE_4E5B)  // scramble, so neighbouring seeds are unrelated
    }

    mutating func next() -> UInt64 { base.next() }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }
}

/// One event of a random workload, fed to both the core and the reference model.
enum WorkloadEvent: CustomStringConvertible {
    case submit(Submission)
    case cancel(Int)
    case cancelJob(Int)
    case cancelQueue(String)
    case suspend(String, Bool)
    case setMax(String, Int)
    case setPriority(Int, QueuePriority)
    case addDependency(Int, on: Int)
    case removeDependency(Int, on: Int)
    case reserve(Int)
    case cancelReservation(Int)
    case addForwardDependency(Int, on: Int)
    case removeForwardDependency(Int, on: Int)
    case join(WorkerID, slots: Int, queues: Set<String>?, labels: [String: String], holding: [Scheduler.HeldAttempt])
    case leave(WorkerID)
    case lose(WorkerID)
    case heartbeat(WorkerID)
    case started(Int, attempt: Int, WorkerID)
    case finished(Int, attempt: Int, WorkerID, AttemptReport)
    /// Time passes; the listed workers sent a heartbeat just before.
    case tick(Double, heartbeats: [WorkerID])

    var description: String {
        switch self {
        case .submit(let s):
            let settings = s.queueSettings.map { " set \($0.queue) max \($0.settings.maxConcurrent ?? -1)" }.joined()
            return "submit[" + s.operations.map(WorkloadEvent.describe).joined(separator: ", ") + "]" + settings
        case .cancel(let id): return "cancel op-\(id)"
        case .cancelJob(let id): return "cancel job-\(id)"
        case .cancelQueue(let q): return "cancelAll \(q)"
        case let .suspend(q, s): return "\(s ? "suspend" : "resume") \(q)"
        case let .setMax(q, m): return "setMax \(q) \(m)"
        case let .setPriority(id, p): return "setPriority op-\(id) \(p)"
        case let .addDependency(id, target): return "addDependency op-\(id) on op-\(target)"
        case let .removeDependency(id, target): return "removeDependency op-\(id) on op-\(target)"
        case .reserve(let count): return "reserve \(count)"
        case .cancelReservation(let number): return "cancel op-r\(number)"
        case let .addForwardDependency(id, number): return "addDependency op-\(id) on op-r\(number)"
        case let .removeForwardDependency(id, number): return "removeDependency op-\(id) on op-r\(number)"
        case let .join(w, slots, queues, labels, holding):
            let q = queues.map { " queues \($0.sorted())" } ?? ""
            let l = labels.isEmpty ? "" : " labels \(labels)"
            let h = holding.isEmpty ? "" : " holding \(holding.map { "\($0.operation)#\($0.attempt)" })"
            return "join \(w) slots \(slots)\(q)\(l)\(h)"
        case .leave(let w): return "leave \(w)"
        case .lose(let w): return "lost \(w)"
        case .heartbeat(let w): return "heartbeat \(w)"
        case let .started(id, attempt, w): return "started op-\(id)#\(attempt) on \(w)"
        case let .finished(id, attempt, w, r): return "finished op-\(id)#\(attempt) on \(w): \(r.status)"
        case let .tick(t, beats): return "tick \(t) (heartbeats \(beats.map(\.name)))"
        }
    }

    static func describe(_ spec: OperationSpec) -> String {
        var parts = [spec.name.isEmpty ? "_" : spec.name, spec.queue]
        if spec.priority != .normal { parts.append("\(spec.priority)") }
        if !spec.dependencies.isEmpty { parts.append("deps\(spec.dependencies.map(\.description))") }
        if spec.isBarrier { parts.append("barrier") }
        if let reservation = spec.reservation { parts.append("takes \(reservation)") }
        if spec.isCancelled { parts.append("cancelled") }
        if spec.work.isEmpty { parts.append("empty") }
        if spec.requires == .success { parts.append("success") }
        if spec.retries != 0 { parts.append("r\(spec.retries)") }
        if let t = spec.timeout { parts.append("t\(t)") }
        if !spec.labels.isEmpty { parts.append("\(spec.labels)") }
        return parts.joined(separator: " ")
    }
}

/// Picks random events that make sense for the model's current state (mostly valid, some invalid).
struct WorkloadGenerator {
    var rng: SeededGenerator
    let queueNames: [String]
    var workerCount = 0
    /// Workers that joined at least once (some may be gone).
    var knownWorkers: [WorkerID] = []
    /// Attempts seen dispatched, for stale reports.
    var pastAttempts: [(op: Int, attempt: Int, worker: WorkerID)] = []

    init(seed: UInt64) {
        rng = SeededGenerator(seed: seed)
        queueNames = Array(["default", "q1", "q2"].prefix(rng.int(1...3)))
    }

    mutating func next(_ model: ReferenceModel) -> WorkloadEvent {
        for o in model.ops where model.isHeld(o) && !pastAttempts.contains(where: { $0.op == o.id && $0.attempt == o.attempt }) {
            pastAttempts.append((o.id, o.attempt, o.worker!))
        }
        if pastAttempts.count > 40 { pastAttempts.removeFirst(pastAttempts.count - 40) }
        let held = model.ops.filter(model.isHeld)
        let unfinished = model.ops.filter { $0.state != .finished }
        if model.workers.isEmpty, rng.chance(0.3) { return join(model) }
        if rng.chance(0.06) { return reservationEvent(model, unfinished) }
        let roll = rng.int(0...999)
        switch roll {
        case 0..<140:
            return .submit(submission(model))
        case 140..<165 where !model.ops.isEmpty:
            return .cancel(randomOp(model, unfinished))
        case 165..<172 where !model.jobs.isEmpty:
            return .cancelJob(rng.int(max(1, model.jobs.count - 4)...model.jobs.count + (rng.chance(0.1) ? 1 : 0)))
        case 172..<175:
            return .cancelQueue(rng.chance(0.1) ? "nowhere" : rng.pick(queueNames))
        case 175..<220:
            return .suspend(rng.pick(queueNames), rng.chance(0.3))
        case 220..<250:
            return .setMax(rng.pick(queueNames), rng.pick([-1, -1, 0, 1, 1, 3, -2]))
        case 250..<280 where !model.ops.isEmpty:
            return .setPriority(randomOp(model, unfinished), QueuePriority(snapping: rng.int(-10...10)))
        case 280..<350 where model.ops.count >= 2:
            let a = randomOp(model, unfinished), b = randomOp(model, unfinished)
            return .addDependency(a, on: rng.chance(0.03) ? model.ops.count + 1 : b)
        case 350..<370 where model.ops.contains { !$0.explicit.isEmpty }:
            let o = rng.pick(model.ops.filter { !$0.explicit.isEmpty })
            return .removeDependency(o.id, on: rng.chance(0.85) ? rng.pick(o.explicit) : randomOp(model, unfinished))
        case 370..<400:
            return join(model)
        case 400..<415 where !model.workers.isEmpty:
            return rejoin(model)
        case 415..<425 where !model.workers.isEmpty:
            return .leave(rng.pick(model.workers).id)
        case 425..<435 where !model.workers.isEmpty:
            return .lose(rng.pick(model.workers).id)
        case 435..<460 where !knownWorkers.isEmpty:
            return .heartbeat(rng.chance(0.9) && !model.workers.isEmpty ? rng.pick(model.workers).id : rng.pick(knownWorkers))
        case 460..<600 where !held.isEmpty:
            if rng.chance(0.1), !pastAttempts.isEmpty { let p = rng.pick(pastAttempts); return .started(p.op, attempt: p.attempt, p.worker) }
            let o = rng.pick(held)
            return .started(o.id, attempt: o.attempt, o.worker!)
        case 600..<850 where !held.isEmpty:
            let report = rng.pick([AttemptReport.succeeded, .succeeded, .succeeded, .exited(1), .exited(2),
                                   AttemptReport(.cancelled), AttemptReport(.failed, reason: .signal, signal: 9)])
            if rng.chance(0.1), !pastAttempts.isEmpty {
                let p = rng.pick(pastAttempts)
                return .finished(p.op, attempt: p.attempt, p.worker, report)
            }
            let o = rng.pick(held)
            return .finished(o.id, attempt: o.attempt, o.worker!, report)
        default:
            let beats = model.workers.map(\.id).filter { _ in rng.chance(0.85) }
            return .tick(model.now + rng.pick([0, 0.25, 0.5, 0.5, 1, 1, 1.5, 2, 3.5]), heartbeats: beats)
        }
    }

    /// Reservations: hand some out, add or remove forward edges, give one up (mostly open ones).
    mutating func reservationEvent(_ model: ReferenceModel, _ unfinished: [ReferenceModel.Op]) -> WorkloadEvent {
        let open = model.reservations.keys.sorted()
        let number = open.isEmpty || rng.chance(0.05) ? model.handedOut + 1 : rng.pick(open)
        switch rng.int(0...9) {
        case 0...2 where !model.ops.isEmpty && !open.isEmpty:
            return .addForwardDependency(randomOp(model, unfinished), on: number)
        case 3 where !model.ops.isEmpty && !open.isEmpty:
            let edges = open.flatMap { n in model.reservations[n]!.map { (number: n, dependant: $0) } }
            if !edges.isEmpty, rng.chance(0.8) {
                let edge = rng.pick(edges)
                return .removeForwardDependency(edge.dependant, on: edge.number)
            }
            return .removeForwardDependency(randomOp(model, unfinished), on: number)
        case 4 where !open.isEmpty:
            return .cancelReservation(number)
        default:
            return .reserve(rng.chance(0.05) ? 0 : rng.int(1...3))
        }
    }

    /// Mostly a recent unfinished operation; sometimes any operation.
    mutating func randomOp(_ model: ReferenceModel, _ unfinished: [ReferenceModel.Op]) -> Int {
        if !unfinished.isEmpty, rng.chance(0.8) { return rng.pick(Array(unfinished.suffix(12))).id }
        return rng.int(max(1, model.ops.count - 20)...model.ops.count)
    }

    mutating func submission(_ model: ReferenceModel) -> Submission {
        let count = rng.chance(0.05) ? rng.int(5...9) : rng.int(1...4)
        var specs: [OperationSpec] = []
        for k in 0..<count {
            var spec = OperationSpec(name: rng.chance(0.1) ? "" : "n\(k)", queue: rng.pick(queueNames),
                                     work: rng.chance(0.15) ? .empty : .command(Command(["run", "\(k)"])))
            if k > 0 {
                for _ in 0..<rng.int(0...2) {
                    let j = rng.int(0...(k - 1))
                    if !specs[j].name.isEmpty { spec.dependencies.append(.name(specs[j].name)) }
                }
            }
            if !model.ops.isEmpty, rng.chance(0.3) {
                spec.dependencies.append(.id(OperationID(UInt64(rng.int(max(1, model.ops.count - 15)...model.ops.count)))))
            }
            spec.priority = rng.chance(0.5) ? .normal : QueuePriority(snapping: rng.int(-10...10))
            spec.requires = rng.chance(0.25) ? .success : .any
            spec.retries = rng.chance(0.3) ? rng.int(1...3) : 0
            spec.timeout = rng.chance(0.2) ? rng.pick([1, 2, 3.5]) : nil
            spec.labels = rng.chance(0.15) ? ["gpu": "1"] : [:]
            spec.isBarrier = rng.chance(0.04)
            if !model.reservations.isEmpty {
                let open = model.reservations.keys.sorted()
                if rng.chance(0.2) { spec.reservation = .reservation(UInt64(rng.pick(open))) }
                if rng.chance(0.15) { spec.dependencies.append(.id(.reservation(UInt64(rng.pick(open))))) }
                if rng.chance(0.01) { spec.reservation = .reservation(UInt64(model.handedOut + 1)) }  // never handed out
            }
            spec.isCancelled = rng.chance(0.02)
            specs.append(spec)
        }
        var settings: [(queue: String, settings: QueueSettings)] = []
        if rng.chance(0.05) { settings.append((rng.pick(queueNames), QueueSettings(maxConcurrent: rng.pick([-1, 1, 2])))) }
        if rng.chance(0.06) {  // something invalid: the whole batch must be refused
            let k = rng.int(0...(count - 1))
            switch rng.int(0...6) {
            case 0: specs.append(OperationSpec(name: specs[k].name.isEmpty ? "dup" : specs[k].name)); specs.append(OperationSpec(name: "dup"))
            case 1: specs[k].dependencies.append(.name("missing"))
            case 2: specs[k].dependencies.append(.id(OperationID(UInt64(model.ops.count + 1 + k))))
            case 3:
                specs[k].name = "cyc"
                specs.append(OperationSpec(name: "cyc2", queue: specs[k].queue, dependencies: [.name("cyc")]))
                specs[k].dependencies.append(.name("cyc2"))
            case 4: specs[k].timeout = rng.pick([0, -1])
            case 5: specs[k].retries = -1
            default: settings.append((rng.pick(queueNames), QueueSettings(maxConcurrent: -2)))
            }
        }
        return Submission(specs, queueSettings: settings)
    }

    mutating func join(_ model: ReferenceModel) -> WorkloadEvent {
        let id: WorkerID
        if knownWorkers.isEmpty || rng.chance(0.6) || knownWorkers.count < 2 {
            workerCount += 1
            id = WorkerID("w\(workerCount)")
            knownWorkers.append(id)
        } else {
            id = rng.pick(knownWorkers)
        }
        let filter: Set<String>? = rng.chance(0.2) ? Set(queueNames.filter { _ in rng.chance(0.5) }) : nil
        let labels: [String: String] = rng.chance(0.3) ? ["gpu": "1"] : rng.chance(0.1) ? ["gpu": "2"] : [:]
        var holding: [Scheduler.HeldAttempt] = []
        if rng.chance(0.1), let p = pastAttempts.last { holding.append(.init(OperationID(UInt64(p.op)), attempt: p.attempt)) }
        return .join(id, slots: rng.chance(0.05) ? 0 : rng.int(1...3), queues: filter, labels: labels, holding: holding)
    }

    /// A live worker re-registers: new slot count, reporting most of what it holds, perhaps an old attempt.
    mutating func rejoin(_ model: ReferenceModel) -> WorkloadEvent {
        let worker = rng.pick(model.workers)
        var holding = model.ops.filter { model.isHeld($0) && $0.worker == worker.id && rng.chance(0.8) }
            .map { Scheduler.HeldAttempt(OperationID(UInt64($0.id)), attempt: $0.attempt + (rng.chance(0.05) ? 1 : 0)) }
        if rng.chance(0.3), !pastAttempts.isEmpty {
            let p = rng.pick(pastAttempts)
            holding.append(.init(OperationID(UInt64(p.op)), attempt: p.attempt))
        }
        let slots = rng.chance(0.8) ? worker.slots : rng.int(0...3)
        return .join(worker.id, slots: slots, queues: worker.queues, labels: worker.labels, holding: holding)
    }
}
