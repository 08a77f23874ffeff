import Testing
@testable import OPQCore

/// Seeded random workloads with CPUs and memory against ``ResourceModel``: after every event the core
/// made exactly the model's dispatches, no worker holds more than it offers, and the first operation in
/// line that fits nowhere is never set back (no starvation, README "Resources" R3).
@Suite struct ResourceWorkloadTests {
    static let gib = 1 << 30

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomResourceWorkloadMatchesTheModelAndNeverOvercommitsOrStarves(seed: UInt64) throws {
        var random = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 17)
        var core = Scheduler(configuration: { var c = Scheduler.Configuration(); c.leaseMargin = 0; return c }())
        var model = ResourceModel()
        var names: [OperationID: String] = [:]
        var ids: [String: OperationID] = [:]
        var attempts: [String: (Int, WorkerID)] = [:]
        var nextOp = 0
        var nextWorker = 0
        var finished = 0
        var watchedHead: (name: String, free: (Int, Int))?

        func coreDispatches() throws -> [(String, String)] {
            var out: [(String, String)] = []
            for effect in core.takeEffects() {
                if case let .dispatch(id, attempt, worker, _) = effect {
                    out.append((names[id]!, worker.name))
                    attempts[names[id]!] = (attempt, worker)
                }
            }
            try core.checkInvariants()
            for worker in core.workerSnapshots {
                #expect(worker.usedCpus <= worker.cpus, "seed \(seed): \(worker.id) uses \(worker.usedCpus) of \(worker.cpus) cpus")
                if let memory = worker.memory {
                    #expect(worker.usedMemory <= memory, "seed \(seed): \(worker.id) uses \(worker.usedMemory) of \(memory) bytes")
                }
            }
            return out
        }

        func randomWorker() -> ResourceModel.Worker {
            nextWorker += 1
            let cpus = Int.random(in: 1...8, using: &random)
            let memory: Int? = Bool.random(using: &random) ? Int.random(in: 1...8, using: &random) * Self.gib : nil
            let queues: Set<String>? = [nil, nil, ["a"], ["b"]][Int.random(in: 0...3, using: &random)]
            return .init(name: "w\(nextWorker)", slots: Int.random(in: 1...6, using: &random), cpus: cpus, memory: memory, queues: queues)
        }

        func randomOperation() -> OperationSpec {
            nextOp += 1
            var spec = op("o\(nextOp)", queue: Bool.random(using: &random) ? "a" : "b",
                          priority: [.low, .normal, .normal, .high][Int.random(in: 0...3, using: &random)])
            let large = Int.random(in: 0..<5, using: &random) == 0
            spec.resources = Resources(cpus: large ? Int.random(in: 2...9, using: &random) : 1,
                                       memory: Int.random(in: 0..<3, using: &random) == 0 ? Int.random(in: 1...6, using: &random) * Self.gib : 0)
            return spec
        }

        /// Checks one event: the core's dispatches equal the model's, and the head's reservation only grows.
        func check(_ expected: [(String, String)], _ event: String, headMayMove: Bool = false) throws {
            let actual = try coreDispatches()
            #expect(actual.map { "\($0.0)→\($0.1)" } == expected.map { "\($0.0)→\($0.1)" }, "seed \(seed), after \(event)")
            let ahead = expected.contains { name, _ in
                guard let watched = watchedHead, let op = model.running[name]?.operation,
                      let head = model.inLine.first(where: { $0.name == watched.name }) else { return false }
                return (op.priority.rawValue, -op.sequence) > (head.priority.rawValue, -head.sequence)
            }
            guard let (name, w) = model.decide().headReservation else { watchedHead = nil; return }
            let free = (model.workers[w].freeCpus, model.workers[w].freeMemory)
            if let watched = watchedHead, watched.name == name, !headMayMove, !ahead {
                #expect(free >= watched.free, "seed \(seed), after \(event): \(name)'s reservation shrank from \(watched.free) to \(free)")
            }
            watchedHead = (name, free)
        }

        for step in 0..<400 {
            let time = Double(step)
            switch Int.random(in: 0..<20, using: &random) {
            case 0..<2 where model.workers.count < 5, 0 where model.workers.isEmpty:
                let worker = randomWorker()
                core.workerJoined(WorkerID(worker.name), slots: worker.slots, queues: worker.queues, cpus: worker.cpus,
                                  memory: worker.memory, at: time)
                try check(model.join(worker), "join \(worker.name)")
            case 2 where model.workers.count > 1:
                let name = model.workers[Int.random(in: 0..<model.workers.count, using: &random)].name
                core.workerLeft(WorkerID(name), at: time)
                try check(model.leave(name), "leave \(name)", headMayMove: true)
            case 3 where !model.ready.isEmpty:
                let name = model.ready[Int.random(in: 0..<model.ready.count, using: &random)].name
                try core.cancel(ids[name]!, at: time)
                try check(model.cancel(name), "cancel \(name)")
            case 4..<11:
                let specs = (0..<Int.random(in: 1...3, using: &random)).map { _ in randomOperation() }
                let receipt = try core.submit(Submission(specs), at: time)
                for (spec, id) in zip(specs, receipt.operations) {
                    names[id] = spec.name
                    ids[spec.name] = id
                }
                try check(model.submit(specs), "submit " + specs.map(\.name).joined(separator: ","))
            default:
                guard !model.running.isEmpty else { continue }
                let name = model.running.keys.sorted()[Int.random(in: 0..<model.running.count, using: &random)]
                let (attempt, worker) = attempts[name]!
                let accepted = core.finished(ids[name]!, attempt: attempt, worker: worker, .succeeded, at: time)
                #expect(accepted)
                finished += 1
                try check(model.finish(name), "finish \(name)")
            }
        }
        // Drain: without new work everything that some live worker can hold runs and finishes.
        var time = 1_000.0
        while let name = model.running.keys.sorted().first {
            let (attempt, worker) = attempts[name]!
            time += 1
            let accepted = core.finished(ids[name]!, attempt: attempt, worker: worker, .succeeded, at: time)
            #expect(accepted)
            finished += 1
            try check(model.finish(name), "drain \(name)")
        }
        let stuck = model.ready.filter { model.canEverRun($0) }.map(\.name)
        #expect(stuck.isEmpty, "seed \(seed): \(stuck) could run but never did")
        for op in model.ready { #expect(core.blockers(of: ids[op.name]!).contains { if case .tooLarge = $0 { true } else if case .noWorker = $0 { true } else { false } }) }
        #expect(finished > 100, "seed \(seed): the workload ran \(finished) operations")
    }
}
