import Testing
@testable import OPQCore

/// `opq prune` walks the finished jobs in finish order (``Scheduler/pruneFinished(while:)``): the order
/// the core keeps must match a brute-force scan after any mix of submissions, finishes, prunes and
/// recoveries, and a prune that removes nothing must look at (almost) nothing.
@Suite struct FinishOrderTests {
    /// What the journal holds, in order: the core's records and the prunes (`.forgotten` entries).
    enum Logged {
        case record(JournalRecord)
        case forgotten(JobID)
    }

    /// A seeded workload with a reference model of the finish order.
    struct Run {
        var random: SplitMix64
        var core = Scheduler(configuration: .init())
        var log: [Logged] = []
        /// Reference: finished, unpruned jobs in the order their `.jobFinished` came, and the step of each.
        var order: [JobID] = []
        var finishedAt: [JobID: Int] = [:]
        var step = 0
        var queues = ["default", "q1", "q2"]

        init(seed: UInt64) { random = SplitMix64(seed: seed) }

        mutating func absorb() {
            for effect in core.takeEffects() {
                switch effect {
                case .jobFinished(let job):
                    order.append(job)
                    finishedAt[job] = step
                case .journal(let record): log.append(.record(record))
                default: break
                }
            }
        }

        /// Finished, unpruned jobs by a scan of every job (order-free).
        func bruteForce() -> Set<JobID> {
            Set((0..<core.jobCount).map { JobID(UInt64($0) + 1) }.filter { core.isFinished(job: $0) == true })
        }

        func check(_ context: String) throws {
            try core.checkInvariants()
            let live = core.finishedJobs.entries.filter { core.isFinished(job: JobID(index: $0)) == true }.map { JobID(index: $0) }
            #expect(live == order, "\(context): core finish order \(live), reference \(order)")
            #expect(Set(order) == bruteForce(), "\(context): reference \(order) disagrees with a scan")
        }

        mutating func pick<T>(_ values: [T]) -> T? { values.isEmpty ? nil : values[Int(random.next() % UInt64(values.count))] }

        mutating func randomStep() throws {
            step += 1
            let roll = random.next() % 100
            let unfinished = (0..<core.jobCount).map { JobID(UInt64($0) + 1) }.filter { core.isFinished(job: $0) == false }
            switch roll {
            case 0..<35:
                let queue = pick(queues)!
                let count = 1 + Int(random.next() % 3)
                _ = try core.submit(Submission((0..<count).map { _ in op("", queue: queue) }), at: Timestamp(step))
            case 35..<55:
                if let job = pick(unfinished), let first = core.job(job)?.operations.first {
                    _ = try core.cancel(first, at: Timestamp(step))
                }
            case 55..<70:
                if let job = pick(unfinished) { _ = try core.cancel(job: job, at: Timestamp(step)) }
            case 70..<75:
                _ = try core.cancelAll(inQueue: pick(queues)!, at: Timestamp(step))
            case 75..<85:
                absorb()
                let cutoff = step - Int(random.next() % 30)
                let expected = Array(order.prefix { finishedAt[$0]! <= cutoff })
                let times = finishedAt
                let pruned = core.pruneFinished { times[$0]! <= cutoff }.map(\.job)
                #expect(pruned == expected, "step \(step): pruned \(pruned), reference \(expected)")
                order.removeFirst(expected.count)
                log += pruned.map(Logged.forgotten)
            case 85..<92:
                absorb()
                if let job = pick(order) {
                    #expect(core.prune(job: job)?.job == job)
                    order.removeAll { $0 == job }
                    log.append(.forgotten(job))
                }
            default:
                absorb()
                try recover()
            }
            absorb()
            try check("step \(step)")
        }

        /// A fresh core replays the log, as the journal does after a crash.
        mutating func recover() throws {
            var fresh = Scheduler(configuration: core.configuration)
            for entry in log {
                switch entry {
                case .record(let record): _ = try fresh.replay(record, at: Timestamp(step))
                case .forgotten(let job): #expect(fresh.prune(job: job) != nil, "replaying the prune of \(job)")
                }
            }
            _ = fresh.takeEffects()
            core = fresh
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func theFinishOrderMatchesABruteForceScanThroughPrunesAndRecoveries(seed: UInt64) throws {
        var run = Run(seed: seed)
        for _ in 0..<400 { try run.randomStep() }
    }

    @Test func aPruneThatRemovesNothingLooksAtOneJob() throws {
        var run = Run(seed: 42)
        for step in 1...2_000 {
            run.step = step
            _ = try run.core.submit(Submission([op("")]), at: Timestamp(step))
            if step % 4 != 0 { _ = try run.core.cancel(job: JobID(UInt64(step)), at: Timestamp(step)) }
            run.absorb()
        }
        try run.check("history")
        let before = run.core.pruneVisits
        #expect(run.core.pruneFinished { _ in false }.isEmpty)
        #expect(run.core.pruneVisits - before == 1, "a prune that removes nothing looks only at the oldest finished job")

        let old = run.core.pruneVisits
        let times = run.finishedAt
        let pruned = run.core.pruneFinished { times[$0]! <= 100 }
        #expect(pruned.count == 75)
        #expect(run.core.pruneVisits - old == 76, "a prune looks at what it removes and the job it stops at")
    }
}
