import OPQCore

/// The figures of one shape at one size.
struct ThroughputRow: Codable {
    /// The core's figures (best of `repetitions` runs), or nil when skipped.
    struct Core: Codable {
        var seconds: Double
        var operationsPerSecond: Double
        var nanosecondsPerOperation: Double
        var submitNanosecondsPerOperation: Double
        /// Cost per operation relative to the smallest size of this shape in the run.
        var flatness: Double?
        var effectsPerOperation: Double
        var effects: EffectCounts
        var repetitions: Int
    }

    /// Foundation's figures, or nil when not run (see `foundationStatus`).
    struct Foundation: Codable {
        var seconds: Double
        var operationsPerSecond: Double
        var repetitions: Int
    }

    var shape: Shape
    var size: Int
    var edges: Int
    var core: Core?
    /// Why the core did not run, when it did not.
    var coreStatus: String?
    /// When the core was skipped: the time one run was predicted to take.
    var corePredictedSeconds: Double?
    var foundation: Foundation?
    /// Why Foundation did not run, when it did not.
    var foundationStatus: String?

    /// Core operations per second over Foundation's, where both ran.
    var speedup: Double? {
        guard let core, let foundation else { return nil }
        return core.operationsPerSecond / foundation.operationsPerSecond
    }
}

/// Bytes per pending operation for one shape and size.
struct MemoryRow: Codable {
    var shape: Shape
    var size: Int
    var memory: PendingMemory?
}

/// Runs the measurements the options ask for.
struct Benchmark {
    let options: Options
    let cluster: SimulatedCluster

    init(options: Options) {
        self.options = options
        cluster = SimulatedCluster(workers: options.workers, slots: options.slots, reportsStarted: options.reportsStarted)
    }

    /// Throughput rows, shape by shape, sizes ascending. `progress` is told what is running.
    func throughput(progress: (String) -> Void) -> [ThroughputRow] {
        warmUp()
        var rows: [ThroughputRow] = []
        for shape in options.shapes {
            var coreBudget = Budget(seconds: options.coreBudget)
            var foundationBudget = Budget(seconds: options.foundationBudget)
            var baseCost: Double?
            // A probe at half the smallest size gives both budgets a growth exponent from the start.
            let probe = Workload(shape, size: max(2, options.sizes[0] / 2))
            progress("\(shape.rawValue) probe (\(probe.size))")
            let probeCore = cluster.run(probe.submission(), count: probe.size)
            coreBudget.record(size: probe.size, seconds: probeCore.seconds, charged: probeCore.seconds)
            if options.foundation {
                let seconds = FoundationBaseline.run(probe, maxConcurrent: cluster.totalSlots)
                foundationBudget.record(size: probe.size, seconds: seconds, charged: seconds)
            }

            for size in options.sizes {
                let workload = Workload(shape, size: size)
                var row = ThroughputRow(shape: shape, size: size, edges: workload.edgeCount)
                if coreBudget.allows(size) {
                    progress("core \(shape.rawValue) \(Format.size(size))")
                    let core = runCore(workload, predicted: coreBudget.predict(size), budget: &coreBudget)
                    baseCost = baseCost ?? core.nanosecondsPerOperation
                    row.core = core
                    row.core?.flatness = baseCost.map { core.nanosecondsPerOperation / $0 }
                } else {
                    row.coreStatus = "skipped (budget)"
                    row.corePredictedSeconds = coreBudget.predict(size)
                }
                if !options.foundation {
                    row.foundationStatus = "off"
                } else if size > FoundationBaseline.sizeCap(shape, smoke: options.isSmoke) || !foundationBudget.allows(size) {
                    row.foundationStatus = "skipped (budget)"
                } else {
                    progress("Foundation \(shape.rawValue) \(Format.size(size))")
                    row.foundation = runFoundation(workload, predicted: foundationBudget.predict(size), budget: &foundationBudget)
                }
                rows.append(row)
            }
        }
        return rows
    }

    /// Bytes per pending operation, for the independent and chain shapes among those asked for.
    func memory(progress: (String) -> Void) -> [MemoryRow] {
        var rows: [MemoryRow] = []
        for shape in options.shapes where shape == .independent || shape == .chain {
            for size in options.sizes {
                progress("memory \(shape.rawValue) \(Format.size(size))")
                let submission = Workload(shape, size: size).submission()
                rows.append(MemoryRow(shape: shape, size: size,
                                      memory: SimulatedCluster.pendingMemory(submission, count: size)))
            }
        }
        return rows
    }

    /// Best of a few runs of `workload` through the core.
    private func runCore(_ workload: Workload, predicted: Double?, budget: inout Budget) -> ThroughputRow.Core {
        let submission = workload.submission()
        let repetitions = Budget.repetitions(size: workload.size, predicted: predicted)
        var best: CoreRun?
        var total = 0.0
        for _ in 0..<repetitions {
            let run = cluster.run(submission, count: workload.size)
            total += run.seconds
            if best == nil || run.seconds < best!.seconds { best = run }
        }
        budget.record(size: workload.size, seconds: best!.seconds, charged: total)
        let n = Double(workload.size)
        return ThroughputRow.Core(
            seconds: best!.seconds, operationsPerSecond: n / best!.seconds,
            nanosecondsPerOperation: best!.seconds * 1e9 / n,
            submitNanosecondsPerOperation: best!.submitSeconds * 1e9 / n,
            flatness: nil, effectsPerOperation: Double(best!.effects.total) / n,
            effects: best!.effects, repetitions: repetitions)
    }

    /// Best of a few runs of `workload` on Foundation's `OperationQueue`.
    private func runFoundation(_ workload: Workload, predicted: Double?, budget: inout Budget) -> ThroughputRow.Foundation {
        let repetitions = min(3, Budget.repetitions(size: workload.size, predicted: predicted))
        var best = Double.infinity
        var total = 0.0
        for _ in 0..<repetitions {
            let seconds = FoundationBaseline.run(workload, maxConcurrent: cluster.totalSlots)
            total += seconds
            best = min(best, seconds)
        }
        budget.record(size: workload.size, seconds: best, charged: total)
        return ThroughputRow.Foundation(seconds: best, operationsPerSecond: Double(workload.size) / best, repetitions: repetitions)
    }

    /// Runs every shape once at a small size so code and allocator are warm before the first figure.
    private func warmUp() {
        for shape in Shape.allCases {
            let workload = Workload(shape, size: 2_000)
            _ = cluster.run(workload.submission(), count: workload.size)
        }
    }
}
