import Foundation
import OPQCore
import Testing

/// Seeded random workloads: thousands of random event sequences run through the core and through a
/// deliberately simple reference model; after every event the core's invariants hold, its public view
/// equals the model's, and its effects are sound.
///
/// Environment: `OPQ_SEED=n` runs seed n alone (with `OPQ_TRACE=1` printing every event);
/// `OPQ_SEEDS=n` runs n seeds (default 2,000) starting at `OPQ_SEED_START` (default 1);
/// `OPQ_MAX_EVENTS=n` makes workloads 100…n events long (default 140, so the default run stays under a
/// minute in a debug build; cost grows faster than length, as `checkInvariants()` scans every operation).
@Suite struct RandomWorkloadTests {
    static let shards = 4

    static func seeds(shard: Int) -> [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let one = environment["OPQ_SEED"].flatMap(UInt64.init) { return shard == 0 ? [one] : [] }
        let count = environment["OPQ_SEEDS"].flatMap(UInt64.init) ?? 2_000
        let start = environment["OPQ_SEED_START"].flatMap(UInt64.init) ?? 1
        return (start..<start + count).filter { Int($0 % UInt64(shards)) == shard }
    }

    @Test("Random workloads agree with the reference model", arguments: 0..<shards)
    func randomWorkloadsAgreeWithReferenceModel(shard: Int) {
        let trace = ProcessInfo.processInfo.environment["OPQ_TRACE"] == "1"
        let longest = ProcessInfo.processInfo.environment["OPQ_MAX_EVENTS"].flatMap(Int.init).map { max($0, 100) } ?? 140
        var failures = 0
        for seed in Self.seeds(shard: shard) {
            var run = WorkloadRun(seed: seed)
            run.traceAll = trace
            if let failure = run.run(lengths: 100...longest) {
                Issue.record("\(failure)")
                failures += 1
                if failures >= 3 { return }
            }
        }
    }

    /// Found by seed 1 (and most seeds): an empty dependant released by the cancel of an operation earlier
    /// in the same `cancelAllOperations` snapshot ran to success instead of being cancelled (SEMANTICS §5).
    @Test func cancellingAQueueCancelsAnEmptyDependantInsteadOfRunningIt() throws {
        var core = Scheduler()
        let receipt = try core.submit(Submission([
            OperationSpec(name: "a", work: .command(Command(["true"]))),
            OperationSpec(name: "join", dependencies: [.name("a")]),
        ]), at: 0)
        try core.cancelAll(inQueue: "default", at: 1)
        let join = try #require(core.operation(receipt.operations[1]))
        #expect(join.state == .finished && join.outcome == .cancelled && join.isCancelled)
    }

    @Test func sameSeedGivesSameWorkload() {
        var a = WorkloadRun(seed: 42), b = WorkloadRun(seed: 42)
        #expect(a.run(steps: 100) == nil)
        #expect(b.run(steps: 100) == nil)
        #expect(a.core.operationTotal == b.core.operationTotal && a.now == b.now && a.core.operationTotal > 0)
    }
}

extension WorkloadRun {
    /// Compares the core's public queries with the model: every operation not already verified finished
    /// (all of them when `full`), every queue, job and live worker.
    mutating func check(full: Bool) -> String? {
        guard core.operationTotal == model.ops.count else {
            return "core has \(core.operationTotal) operations, model \(model.ops.count)"
        }
        if verifiedFinished.count < model.ops.count {
            verifiedFinished += Array(repeating: false, count: model.ops.count - verifiedFinished.count)
        }
        for o in model.ops where full || !verifiedFinished[o.id - 1] {
            guard let s = core.operation(OperationID(UInt64(o.id))) else { return "op-\(o.id) unknown to the core" }
            if s.state != o.state || s.outcome != o.outcome || s.isCancelled != o.isCancelled || s.attempt != o.attempt
                || s.worker != o.worker || s.priority != o.priority || !s.dependencies.elementsEqual(o.explicit, by: { Int($0.rawValue) == $1 }) {
                let core = "\(s.state) \(s.outcome.map(\.description) ?? "-") cancelled=\(s.isCancelled) attempt \(s.attempt) worker \(s.worker?.name ?? "-") deps \(s.dependencies.map(\.rawValue)) \(s.priority)"
                let mine = "\(o.state) \(o.outcome.map(\.description) ?? "-") cancelled=\(o.isCancelled) attempt \(o.attempt) worker \(o.worker?.name ?? "-") deps \(o.explicit) \(o.priority)"
                return "op-\(o.id) '\(o.name)': core \(core), model \(mine)"
            }
            if lastNotified[o.id] != s.state {
                return "op-\(o.id): last event says \(lastNotified[o.id].map(\.description) ?? "nothing"), state is \(s.state)"
            }
            verifiedFinished[o.id - 1] = o.state == .finished
        }
        for number in 1...model.handedOut + 1 {
            let live = core.reservedDependants(of: .reservation(UInt64(number)))?.map { Int($0.rawValue) }
            if live != model.reservations[number] { return "op-r\(number): core waits \(live as Any), model \(model.reservations[number] as Any)" }
        }
        guard core.queueNames == model.queues.map(\.name) else { return "queues: core \(core.queueNames), model \(model.queues.map(\.name))" }
        // One pass over the model for every queue, job and worker view.
        var listed: [String: [Int]] = [:], queueCounts: [String: OperationCounts] = [:], busy: Set<String> = []
        var jobCounts = [OperationCounts](repeating: OperationCounts(), count: model.jobs.count)
        var jobDone = [Bool](repeating: true, count: model.jobs.count)
        var held: [WorkerID: [UInt64]] = [:]
        for o in model.ops {
            if o.state != .finished {
                busy.insert(o.queue)
                jobDone[o.job - 1] = false
                if !o.isBarrier { listed[o.queue, default: []].append(o.id) }
            }
            if model.isHeld(o), o.fencedUntil == nil { held[o.worker!, default: []].append(UInt64(o.id)) }
            if !o.isBarrier {
                add(o, to: &queueCounts[o.queue, default: OperationCounts()])
                add(o, to: &jobCounts[o.job - 1])
            }
        }
        for queue in model.queues {
            let snapshot = core.queue(queue.name)!
            let expected = listed[queue.name] ?? []
            let coreListed = core.operations(inQueue: queue.name).map { Int($0.rawValue) }
            if snapshot.maxConcurrent != queue.maxConcurrent || snapshot.isSuspended != queue.isSuspended {
                return "queue '\(queue.name)': core max \(snapshot.maxConcurrent) suspended \(snapshot.isSuspended), model \(queue)"
            }
            if snapshot.operationCount != expected.count || coreListed != expected {
                return "queue '\(queue.name)': core lists \(coreListed) (count \(snapshot.operationCount)), model \(expected)"
            }
            if core.isIdle(queue: queue.name) == busy.contains(queue.name) { return "queue '\(queue.name)': core idle \(core.isIdle(queue: queue.name))" }
            let counts = queueCounts[queue.name] ?? OperationCounts()
            if snapshot.counts != counts { return "queue '\(queue.name)': core counts \(snapshot.counts), model \(counts)" }
        }
        guard core.jobCount == model.jobs.count else { return "core has \(core.jobCount) jobs, model \(model.jobs.count)" }
        for (j, ids) in model.jobs.enumerated() where full || !(jobDone[j] && finishedJobs.contains(j + 1)) {
            let snapshot = core.job(JobID(UInt64(j + 1)))!
            if snapshot.counts != jobCounts[j] || snapshot.isFinished != jobDone[j] || snapshot.operations.map({ Int($0.rawValue) }) != ids {
                return "job-\(j + 1): core \(snapshot.counts) finished \(snapshot.isFinished), model \(jobCounts[j]) finished \(jobDone[j])"
            }
            if finishedJobs.contains(j + 1) != jobDone[j] { return "job-\(j + 1): jobFinished effect \(finishedJobs.contains(j + 1)), finished \(jobDone[j])" }
        }
        let coreWorkers = core.workerSnapshots
        if !coreWorkers.elementsEqual(model.workers, by: { $0.id == $1.id && $0.slots == $1.slots && $0.operations.map(\.rawValue) == held[$1.id] ?? [] }) {
            let mine = model.workers.map { "\($0.id)/\($0.slots) \(held[$0.id] ?? [])" }
            return "workers: core \(coreWorkers.map { "\($0.id)/\($0.slots) \($0.operations.map(\.rawValue))" }), model \(mine)"
        }
        return nil
    }

    /// Adds one operation to counts by state and outcome.
    func add(_ o: ReferenceModel.Op, to c: inout OperationCounts) {
        switch (o.state, o.outcome) {
        case (.pending, _): c.pending += 1
        case (.ready, _): c.ready += 1
        case (.dispatched, _): c.dispatched += 1
        case (.executing, _): c.executing += 1
        case (.finished, .succeeded?): c.succeeded += 1
        case (.finished, .failed?): c.failed += 1
        case (.finished, _): c.cancelled += 1
        }
    }
}
