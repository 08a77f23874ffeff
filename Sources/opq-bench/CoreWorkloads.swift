import OPQCore

/// Effects the core produced during a run, by kind. The benchmark drops them after counting: the
/// figures are the core's own cost, not the cost of carrying effects out.
struct EffectCounts: Codable {
    var dispatch = 0
    var notify = 0
    var journal = 0
    var jobFinished = 0
    var kill = 0

    var total: Int { dispatch + notify + journal + jobFinished + kill }
}

/// One measured pass of a workload through the core.
struct CoreRun {
    /// Wall-clock seconds from `submit` to the last finish report, inclusive.
    var seconds: Double
    /// Of which the `submit` call (validation, graph build, initial dispatches) and taking its effects.
    var submitSeconds: Double
    /// Effects produced from `submit` on.
    var effects: EffectCounts
}

/// A simulated cluster around one ``Scheduler``: `workers` workers with `slots` slots each, which
/// report every dispatched attempt as started (when `reportsStarted`) and then finished `succeeded`
/// at once. Effects are taken after every event, counted, and dropped — except dispatches, which are
/// queued (FIFO) to be reported back.
struct SimulatedCluster {
    /// Number of workers that join before the submission.
    let workers: Int
    /// Slots per worker.
    let slots: Int
    /// Whether each attempt is reported `started` before `finished` (what a real worker sends).
    let reportsStarted: Bool

    /// Total slots: the Foundation baseline's `maxConcurrentOperationCount`.
    var totalSlots: Int { workers * slots }

    private var workerIDs: [WorkerID] { (0..<workers).map { WorkerID("worker-\($0)") } }

    /// Runs `submission` (of `count` operations) to completion on a fresh core and times it.
    func run(_ submission: Submission, count: Int) -> CoreRun {
        var scheduler = Scheduler()
        var clock: Timestamp = 0
        // Like a coordinator, the loop maps a worker's id to the handle it reports with.
        var handles: [WorkerID: Scheduler.WorkerHandle] = [:]
        for id in workerIDs { handles[id] = scheduler.workerJoined(id, slots: slots, at: clock) }
        var effects: [Effect] = []
        scheduler.takeEffects(into: &effects)

        var counts = EffectCounts()
        var inFlight: [(operation: OperationID, attempt: Int, worker: WorkerID)] = []
        inFlight.reserveCapacity(2 * totalSlots + 1024)
        var head = 0

        let start = Clock.nanoseconds()
        do {
            _ = try scheduler.submit(submission, at: clock)
        } catch {
            fatalError("opq-bench: the core refused the benchmark's own submission: \(error)")
        }
        scheduler.takeEffects(into: &effects)
        SimulatedCluster.absorb(effects, into: &counts, &inFlight)
        let submitted = Clock.nanoseconds()

        while head < inFlight.count {
            let attempt = inFlight[head]
            head += 1
            let worker = handles[attempt.worker]!
            if reportsStarted {
                clock += 1e-6
                scheduler.started(attempt.operation, attempt: attempt.attempt, worker: worker, at: clock)
                scheduler.takeEffects(into: &effects)
                SimulatedCluster.absorb(effects, into: &counts, &inFlight)
            }
            clock += 1e-6
            scheduler.finished(attempt.operation, attempt: attempt.attempt, worker: worker, .succeeded, at: clock)
            scheduler.takeEffects(into: &effects)
            SimulatedCluster.absorb(effects, into: &counts, &inFlight)
            if head >= 1024 {
                inFlight.removeFirst(head)
                head = 0
            }
        }
        let end = Clock.nanoseconds()

        guard counts.dispatch == count, counts.jobFinished == 1 else {
            fatalError("opq-bench: expected \(count) dispatches and 1 finished job, saw \(counts.dispatch) and \(counts.jobFinished)")
        }
        return CoreRun(seconds: Clock.seconds(end - start), submitSeconds: Clock.seconds(submitted - start), effects: counts)
    }

    /// Counts `effects` and queues their dispatches.
    private static func absorb(_ effects: [Effect], into counts: inout EffectCounts,
                               _ inFlight: inout [(operation: OperationID, attempt: Int, worker: WorkerID)]) {
        for effect in effects {
            switch effect {
            case .dispatch(let operation, let attempt, let worker, _):
                counts.dispatch += 1
                inFlight.append((operation, attempt, worker))
            case .notify: counts.notify += 1
            case .journal: counts.journal += 1
            case .jobFinished: counts.jobFinished += 1
            case .kill: counts.kill += 1
            }
        }
    }
}

/// Bytes the core holds per pending operation.
struct PendingMemory: Codable {
    /// Heap (or RSS) growth over the submission, per operation.
    var bytesPerOperation: Double
    /// Of which the capacity the core keeps in its (empty) effects buffer after ``Scheduler/takeEffects()``.
    var effectsBufferPerOperation: Double
}

extension SimulatedCluster {
    /// Submits `submission` (of `count` operations) to a fresh core with no workers — so everything stays
    /// pending or ready — takes and drops the effects, and returns the growth of ``Memory/bytesInUse()``
    /// per operation. The submission itself is built before the first reading and is kept alive past the
    /// second, so only what the core allocated is counted. Nil when memory cannot be measured.
    static func pendingMemory(_ submission: Submission, count: Int) -> PendingMemory? {
        guard let before = Memory.bytesInUse() else { return nil }
        var scheduler = Scheduler()
        do {
            _ = try scheduler.submit(submission, at: 0)
        } catch {
            fatalError("opq-bench: the core refused the benchmark's own submission: \(error)")
        }
        _ = scheduler.takeEffects()
        guard let after = Memory.bytesInUse() else { return nil }
        let buffer = scheduler.effects.capacity * MemoryLayout<Effect>.stride
        return withExtendedLifetime((scheduler, submission)) {
            PendingMemory(bytesPerOperation: Double(after - before) / Double(count),
                          effectsBufferPerOperation: Double(buffer) / Double(count))
        }
    }
}
