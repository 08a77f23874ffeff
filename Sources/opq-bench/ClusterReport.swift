import Foundation
import ZeroMQ

/// Everything one `opq-bench cluster` run measured; printed as tables or as JSON.
struct ClusterReport: Codable {
    var machine: Report.Machine
    /// Where the coordinator and worker executables came from.
    var binaries: String
    var workers: Int
    var throughput: [ClusterThroughputRun] = []
    var latency: ClusterLatency?
    var chain: ClusterChain?
    /// The same two on the one-process cluster (`opq-coordinator --local-workers`, what `opq run` starts).
    var oneProcessLatency: ClusterLatency?
    var oneProcessChain: ClusterChain?
    /// The same two on the one-process cluster started with `--spin 0` (its loops never poll before they sleep).
    var noSpinLatency: ClusterLatency?
    var noSpinChain: ClusterChain?
    var commands: ClusterCommands?
    var failover: ClusterFailover?
    var dashboard: ClusterDashboard?
    /// Measurements that could not be completed, with why.
    var failures: [String] = []
    var targets: [Target] = []
    /// Wall-clock seconds of the whole run (process starts and warm-ups included).
    var runSeconds = 0.0
    /// The 1-minute load average at the start and the end (/proc/loadavg): other work on the machine
    /// shares its cores with the coordinator and workers, and shows here.
    var loadAtStart: Double?
    var loadAtEnd: Double?

    /// The 1-minute load average, where /proc/loadavg exists.
    static func loadAverage() -> Double? {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.flatMap { Double($0) }
    }

    /// A target and how the run did: `PASS`, `MISS`, or `n/a` when the run was too small to judge it.
    struct Target: Codable {
        var name: String
        var goal: String
        var measured: String
        var verdict: String

        init(name: String, goal: String, measured: String, passed: Bool) {
            self.name = name
            self.goal = goal
            self.measured = measured
            verdict = Format.verdict(passed)
        }

        init(name: String, goal: String, measured: String, notJudgedBecause reason: String) {
            self.name = name
            self.goal = goal
            self.measured = measured + " (" + reason + ")"
            verdict = "n/a"
        }
    }

    static let throughputGoal = 50_000.0
    /// Throughput with the dashboard busy over without.
    static let dashboardGoal = 0.95
    static let p50Goal = 200.0  // µs
    static let p99Goal = 2_000.0  // µs
    static let chainRatioGoal = 3.0
    /// The chain length the ratio target is set for: Foundation's cost per operation grows with the
    /// chain, so a shorter (smoke) chain is not judged.
    static let chainGoalLength = 20_000
    /// Leases (SEMANTICS §7): a lost worker's operations go back only after its lease (liveness ×
    /// heartbeat from when it was last heard: 3 s) and the coordinator's 1 s lease margin, plus 0.5 s.
    static let failoverGoal = 4.5  // s
    /// Issue 19's targets, judged on the one-process cluster (what `opq run` users get).
    static let oneSlotGoal = 20_000.0  // no-ops/s, 2 workers × 1 slot
    static let oneProcessP50Goal = 150.0  // µs, ready → executing
    static let oneProcessClientP50Goal = 300.0  // µs, Submit sent → finished event
    static let chainRateGoal = 10_000.0  // links/s

    /// The fastest throughput run at the default sync level.
    var bestThroughput: ClusterThroughputRun? {
        throughput.filter { $0.fsync == "normal" && $0.transport == LocalCluster.Transport.ipc.rawValue && $0.topology == Topology.processes.rawValue }.max { $0.operationsPerSecond < $1.operationsPerSecond }
    }

    /// The TCP run without CURVE and the one with it (`--curve`).
    var curveComparison: (tcp: ClusterThroughputRun, curve: ClusterThroughputRun)? {
        guard let curve = throughput.first(where: { $0.transport == LocalCluster.Transport.tcpCurve.rawValue }),
              let tcp = throughput.first(where: { $0.transport == LocalCluster.Transport.tcp.rawValue }) else { return nil }
        return (tcp, curve)
    }

    /// The `--fsync always` run and the default-sync run at the same slot count.
    var fsyncComparison: (normal: ClusterThroughputRun, always: ClusterThroughputRun)? {
        guard let always = throughput.first(where: { $0.fsync == "always" }),
              let normal = throughput.first(where: { $0.fsync == "normal" && $0.transport == always.transport && $0.slotsPerWorker == always.slotsPerWorker
                                                       && $0.topology == always.topology }) else { return nil }
        return (normal, always)
    }

    /// Judges the targets from what was measured; a measurement that failed is a MISS.
    mutating func judge() {
        targets = []
        if let best = bestThroughput {
            targets.append(Target(name: "no-op throughput, coordinator (journal on) + \(workers) workers", goal: "≥ 50,000 ops/s",
                                  measured: "best \(Format.rate(best.operationsPerSecond)) ops/s at \(best.slotsPerWorker) slots/worker",
                                  passed: best.operationsPerSecond >= Self.throughputGoal))
        } else if failures.contains(where: { $0.hasPrefix("throughput") }) {
            targets.append(Target(name: "no-op throughput", goal: "≥ 50,000 ops/s", measured: "failed", passed: false))
        }
        if let latency {
            targets.append(Target(name: "dispatch latency ready → executing, p50", goal: "≤ 200 µs",
                                  measured: Self.microseconds(latency.p50Microseconds), passed: latency.p50Microseconds <= Self.p50Goal))
            targets.append(Target(name: "dispatch latency ready → executing, p99", goal: "≤ 2 ms",
                                  measured: Self.microseconds(latency.p99Microseconds), passed: latency.p99Microseconds <= Self.p99Goal))
        } else if failures.contains(where: { $0.hasPrefix("latency") }) {
            targets.append(Target(name: "dispatch latency", goal: "p50 ≤ 200 µs, p99 ≤ 2 ms", measured: "failed", passed: false))
        }
        if let chain, let ratio = chain.ratio, chain.operations < Self.chainGoalLength {
            targets.append(Target(name: "\(Format.size(chain.operations)) chain across processes vs Foundation", goal: "≥ 3× at 20k",
                                  measured: Format.fixed(ratio, 1) + "×", notJudgedBecause: "chain shorter than 20k"))
        } else if let chain, let ratio = chain.ratio {
            targets.append(Target(name: "\(Format.size(chain.operations)) chain across processes vs Foundation", goal: "≥ 3×",
                                  measured: Format.fixed(ratio, 1) + "×", passed: ratio >= Self.chainRatioGoal))
        } else if failures.contains(where: { $0.hasPrefix("chain") }) {
            targets.append(Target(name: "chain across processes vs Foundation", goal: "≥ 3×", measured: "failed", passed: false))
        }
        if let one = throughput.first(where: { $0.topology == Topology.oneProcess.rawValue && $0.slotsPerWorker == 1 && $0.fsync == "normal" }) {
            targets.append(Target(name: "one process: \(workers) workers × 1 slot", goal: "≥ 20,000 ops/s",
                                  measured: Format.rate(one.operationsPerSecond) + " ops/s", passed: one.operationsPerSecond >= Self.oneSlotGoal))
        }
        if let one = oneProcessLatency {
            targets.append(Target(name: "one process: dispatch ready → executing, p50", goal: "≤ 150 µs",
                                  measured: Self.microseconds(one.p50Microseconds), passed: one.p50Microseconds <= Self.oneProcessP50Goal))
            targets.append(Target(name: "one process: Submit sent → finished event, p50", goal: "≤ 300 µs",
                                  measured: Self.microseconds(one.clientP50Microseconds), passed: one.clientP50Microseconds <= Self.oneProcessClientP50Goal))
        }
        if let one = oneProcessChain {
            targets.append(Target(name: "one process: \(Format.size(one.operations)) chain", goal: "≥ 10,000 links/s",
                                  measured: Format.rate(one.operationsPerSecond) + " links/s", passed: one.operationsPerSecond >= Self.chainRateGoal))
        }
        if let dashboard {
            targets.append(Target(name: "throughput with --http scraped and streamed vs without", goal: "≥ 0.95×",
                                  measured: Format.fixed(dashboard.ratio, 2) + "×", passed: dashboard.ratio >= Self.dashboardGoal))
        } else if failures.contains(where: { $0.hasPrefix("dashboard") }) {
            targets.append(Target(name: "throughput with --http vs without", goal: "≥ 0.95×", measured: "failed", passed: false))
        }
        if let failover {
            targets.append(Target(name: "kill -9 of a worker → its operations ready again", goal: "≤ 4.5 s",
                                  measured: Format.fixed(failover.seconds, 2) + " s", passed: failover.seconds <= Self.failoverGoal))
        } else if failures.contains(where: { $0.hasPrefix("failover") }) {
            targets.append(Target(name: "kill -9 of a worker → requeued", goal: "≤ 4.5 s", measured: "failed", passed: false))
        }
    }

    /// The report as aligned tables.
    func text() -> String {
        var out: [String] = []
        out.append("opq-bench cluster — opq-coordinator + \(workers) opq-worker processes over ipc://, beside Foundation OperationQueue")
        out.append("  machine:  \(machine.cpu), \(machine.activeCores) of \(machine.cores) cores active, "
                   + "\(Format.bytes(machine.memoryBytes)) RAM, \(machine.os)")
        out.append("  build:    opq-bench \(machine.build), \(machine.compiler); coordinator and workers from \(binaries)")
        out.append("  work:     handler \"noop\" (empty payload) unless said otherwise; every measurement on a fresh coordinator")
        out.append("            and workers (default heartbeat 1 s × 3), warmed up first; run took \(Format.seconds(runSeconds))")
        if let loadAtStart, let loadAtEnd {
            out.append("  load:     1-minute load average \(Format.fixed(loadAtStart, 2)) at start, \(Format.fixed(loadAtEnd, 2)) at end "
                       + "(\(machine.activeCores) cores; other processes share them)")
        }
        if !throughput.isEmpty {
            out.append("")
            var table = TextTable([.init("throughput", right: false), .init("fsync", right: false), .init("transport", right: false),
                                   .init("workers", right: false), .init("slots/worker"), .init("ops"),
                                   .init("time"), .init("submit ack"), .init("ops/s"), .init("≥ 50k", right: false),
                                   .init("coord CPU µs/op"), .init("workers CPU µs/op"), .init("coord switches/op"),
                                   .init("workers switches/op")])
            let best = bestThroughput
            for run in throughput {
                let isBest = run.fsync == best?.fsync && run.transport == best?.transport && run.slotsPerWorker == best?.slotsPerWorker
                    && run.topology == best?.topology
                table.append(["independent no-ops", run.fsync, run.transport, run.topology, String(run.slotsPerWorker), Format.size(run.operations),
                              Format.seconds(run.seconds), Format.seconds(run.submitSeconds), Format.rate(run.operationsPerSecond),
                              run.fsync == "normal" ? Format.verdict(run.operationsPerSecond >= Self.throughputGoal) + (isBest ? " (best)" : "") : "n/a",
                              run.coordinatorCPUMicrosecondsPerOperation.map { Format.fixed($0, 1) } ?? "—",
                              run.workersCPUMicrosecondsPerOperation.map { Format.fixed($0, 1) } ?? "—",
                              run.coordinatorContextSwitchesPerOperation.map { Format.fixed($0, 2) } ?? "—",
                              run.workersContextSwitchesPerOperation.map { Format.fixed($0, 2) } ?? "—"])
            }
            out.append(table.render())
            out.append("  time = Submit sent (one batch) → the Wait reply for the job; submit ack = → the Submit's reply.")
            out.append("  fsync = the coordinator's journal sync level: normal (default: SQLite WAL, synchronous=NORMAL, survives a")
            out.append("  coordinator crash) or always (synchronous=FULL: fsync per loop turn's commit, survives power loss).")
            if let (normal, always) = fsyncComparison {
                let cost = (1 - always.operationsPerSecond / normal.operationsPerSecond) * 100
                out.append("  --fsync always at \(always.slotsPerWorker) slots/worker: \(Format.rate(always.operationsPerSecond)) vs "
                           + "\(Format.rate(normal.operationsPerSecond)) ops/s (\(Format.fixed(cost, 0))% \(cost >= 0 ? "slower" : "faster")).")
            }
            if let (tcp, curve) = curveComparison {
                let ratio = curve.operationsPerSecond / tcp.operationsPerSecond
                out.append("  CURVE over loopback TCP at \(curve.slotsPerWorker) slots/worker: \(Format.rate(curve.operationsPerSecond)) vs "
                           + "\(Format.rate(tcp.operationsPerSecond)) ops/s without it (\(Format.fixed(ratio, 2))×; target ≥ 0.8×: "
                           + "\(Format.verdict(ratio >= 0.8))).")
            }
            out.append("  workers = opq-worker processes, or one-process: threads of the coordinator on direct links (opq run's cluster;")
            out.append("  its coord CPU and switches include the workers').")
            out.append("  CPU µs/op = user + system time (/proc/PID/stat) over the timed run ÷ ops; workers summed. \(machine.activeCores) cores")
            out.append("  carry the coordinator, both workers and this client: a sum near \(machine.activeCores) × 1e6 ÷ ops/s means CPU-bound.")
        }
        if let latency {
            out.append("")
            var table = TextTable([.init("latency", right: false), .init("samples"), .init("p50"), .init("p90"),
                                   .init("p99"), .init("max")])
            table.append(["ready → executing (coordinator clock)", Format.grouped(latency.samples), Self.microseconds(latency.p50Microseconds),
                          Self.microseconds(latency.p90Microseconds), Self.microseconds(latency.p99Microseconds),
                          Self.microseconds(latency.maxMicroseconds)])
            table.append(["client: Submit sent → finished event", Format.grouped(latency.samples), Self.microseconds(latency.clientP50Microseconds),
                          "", Self.microseconds(latency.clientP99Microseconds), ""])
            if let one = oneProcessLatency {
                table.append(["one process: ready → executing", Format.grouped(one.samples), Self.microseconds(one.p50Microseconds),
                              Self.microseconds(one.p90Microseconds), Self.microseconds(one.p99Microseconds), Self.microseconds(one.maxMicroseconds)])
                table.append(["one process: Submit sent → finished event", Format.grouped(one.samples), Self.microseconds(one.clientP50Microseconds),
                              "", Self.microseconds(one.clientP99Microseconds), ""])
            }
            if let slept = noSpinLatency {
                table.append(["one process --spin 0: ready → executing", Format.grouped(slept.samples), Self.microseconds(slept.p50Microseconds),
                              Self.microseconds(slept.p90Microseconds), Self.microseconds(slept.p99Microseconds), Self.microseconds(slept.maxMicroseconds)])
                table.append(["one process --spin 0: Submit sent → finished", Format.grouped(slept.samples), Self.microseconds(slept.clientP50Microseconds),
                              "", Self.microseconds(slept.clientP99Microseconds), ""])
            }
            out.append(table.render())
            out.append("  one no-op at a time on an idle cluster (\(workers) workers × \(ClusterBenchmark.latencySlots) slots); ready and executing are")
            out.append("  the coordinator's timestamps on the watch stream's events (HdrHistogram, 3 significant digits).")
        }
        if let chain {
            out.append("")
            var table = TextTable([.init("chain (each op depends on the previous)", right: false), .init("ops"),
                                   .init("time"), .init("ops/s"), .init("opq/Fdn")])
            table.append(["opq: coordinator + \(workers) workers × \(ClusterBenchmark.latencySlots) slots", Format.size(chain.operations),
                          Format.seconds(chain.seconds), Format.rate(chain.operationsPerSecond),
                          chain.ratio.map { ratio in
                              Format.fixed(ratio, 1) + "× "
                                  + (chain.operations < Self.chainGoalLength ? "n/a" : Format.verdict(ratio >= Self.chainRatioGoal))
                          } ?? "—"])
            for (label, one) in [("opq, one process: workers inside the coordinator", oneProcessChain),
                                 ("opq, one process, --spin 0", noSpinChain)] {
                guard let one else { continue }
                table.append([label, Format.size(one.operations), Format.seconds(one.seconds),
                              Format.rate(one.operationsPerSecond), chain.foundationOperationsPerSecond.map { Format.fixed(one.operationsPerSecond / $0, 1) + "×" } ?? "—"])
            }
            if let seconds = chain.foundationSeconds, let rate = chain.foundationOperationsPerSecond {
                table.append(["Foundation OperationQueue, BlockOperations", Format.size(chain.operations), Format.seconds(seconds), Format.rate(rate), ""])
            } else {
                table.append(["Foundation OperationQueue", "off"])
            }
            out.append(table.render())
            out.append("  opq: one Submit of the whole chain → Wait reply. Foundation: addOperations → waitUntilAllOperationsAreFinished,")
            out.append("  operations and addDependency built before the clock, maxConcurrentOperationCount = \(workers * ClusterBenchmark.latencySlots).")
            if let coordinator = chain.coordinatorCPUMicrosecondsPerOperation, let workersCPU = chain.workersCPUMicrosecondsPerOperation {
                let switches = [chain.coordinatorContextSwitchesPerOperation, chain.workersContextSwitchesPerOperation].map { $0.map { Format.fixed($0, 2) } ?? "—" }
                out.append("  one link (finish → dispatch → start, one round trip): coordinator \(Format.fixed(coordinator, 1)) µs CPU, \(switches[0]) context")
                out.append("  switches; workers \(Format.fixed(workersCPU, 1)) µs CPU, \(switches[1]) switches (all threads, /proc/PID/task/*/status).")
            }
            for (label, one) in [("one process", oneProcessChain), ("one process, --spin 0", noSpinChain)] {
                guard let one, let cpu = one.coordinatorCPUMicrosecondsPerOperation else { continue }
                out.append("  \(label): \(Format.fixed(cpu, 1)) µs CPU and \(one.coordinatorContextSwitchesPerOperation.map { Format.fixed($0, 2) } ?? "—") switches per link, coordinator and workers together.")
            }
            if noSpinChain != nil {
                out.append("  one process: its loop serves the local workers (no-ops run on it), and polls up to \(SpinningWait.oneProcessDefaultMicroseconds) µs for a handler's")
                out.append("  finish on another thread before it sleeps (opq-coordinator --spin, its default with --local-workers); --spin 0 sleeps at once.")
            }
        }
        if let commands {
            out.append("")
            var table = TextTable([.init("commands (true)", right: false), .init("ops"), .init("time"), .init("ops/s"),
                                   .init("workers CPU µs/op"), .init("coord CPU µs/op"), .init("worker threads idle / busy", right: false)])
            table.append(["\(workers) workers × \(commands.slotsPerWorker) slots", Format.size(commands.operations), Format.seconds(commands.seconds),
                          Format.rate(commands.operationsPerSecond),
                          commands.workersCPUMicrosecondsPerOperation.map { Format.fixed($0, 1) } ?? "—",
                          commands.coordinatorCPUMicrosecondsPerOperation.map { Format.fixed($0, 1) } ?? "—",
                          "\(commands.workerThreadsIdle.map(String.init) ?? "—") / \(commands.workerThreadsBusy.map(String.init) ?? "—") "
                              + "(\(commands.busySlots) running)"])
            out.append(table.render())
            out.append("  each a child process (spawn, output pipes, reap, report): the worker's per-command path; threads from /proc/PID/task")
            out.append("  of the first worker, idle after the run and while its \(commands.busySlots) slots run `sleep 2`.")
        }
        if let dashboard {
            out.append("")
            var table = TextTable([.init("dashboard (\(workers) workers × \(dashboard.slotsPerWorker) slots, \(Format.size(dashboard.operations)) no-ops)", right: false),
                                   .init("rounds (ops/s)", right: false), .init("median"), .init("≥ 0.95×", right: false)])
            let median = Statistics.median
            table.append(["without --http", dashboard.plainOperationsPerSecond.map(Format.rate).joined(separator: ", "),
                          Format.rate(median(dashboard.plainOperationsPerSecond)), ""])
            table.append(["with --http: /metrics every 1 s, /api/events open", dashboard.dashboardOperationsPerSecond.map(Format.rate).joined(separator: ", "),
                          Format.rate(median(dashboard.dashboardOperationsPerSecond)), ""])
            table.append(["with / without, per round (median: the verdict)", dashboard.pairedRatios.map { Format.fixed($0, 2) + "×" }.joined(separator: ", "),
                          Format.fixed(dashboard.ratio, 2) + "×", Format.verdict(dashboard.ratio >= Self.dashboardGoal)])
            out.append(table.render())
            let ratios = dashboard.pairedRatios.sorted()
            out.append("  rounds alternate their order, each on a fresh cluster; paired ratios range \(Format.fixed(ratios.first ?? 0, 2))–\(Format.fixed(ratios.last ?? 0, 2))×;")
            out.append("  \(dashboard.scrapes) scrapes answered and \(Format.bytes(UInt64(dashboard.streamBytes))) of snapshots streamed during the runs with --http.")
            if !dashboard.loopShares.isEmpty {
                out.append("  the coordinator's loop spent \(dashboard.loopShares.map { Format.fixed($0 * 100, 2) + " %" }.joined(separator: ", ")) of each run on telemetry")
                out.append("  (reading events, building \(dashboard.snapshots.map(String.init).joined(separator: ", ")) snapshots), by its own clock.")
            }
            if !dashboard.plainCPUMicroseconds.isEmpty && !dashboard.dashboardCPUMicroseconds.isEmpty {
                let plainCPU = median(dashboard.plainCPUMicroseconds), withCPU = median(dashboard.dashboardCPUMicroseconds)
                out.append("  coordinator CPU per operation (all threads), median: \(Format.fixed(plainCPU, 1)) µs without, \(Format.fixed(withCPU, 1)) µs with --http")
                out.append("  (\(Format.fixed(withCPU / plainCPU, 2))×; rounds \(dashboard.plainCPUMicroseconds.map { Format.fixed($0, 1) }.joined(separator: ", ")) vs \(dashboard.dashboardCPUMicroseconds.map { Format.fixed($0, 1) }.joined(separator: ", "))).")
            }
        }
        if let failover {
            out.append("")
            var table = TextTable([.init("failover", right: false), .init("requeued"), .init("first"), .init("last"), .init("≤ 4.5 s", right: false)])
            table.append(["kill -9 \(failover.worker) (heartbeat \(Format.fixed(failover.heartbeatSeconds, 1)) s × \(failover.liveness)) → ready (lost worker)",
                          String(failover.operationsRequeued), Format.fixed(failover.firstSeconds, 2) + " s",
                          Format.fixed(failover.seconds, 2) + " s", Format.verdict(failover.seconds <= Self.failoverGoal)])
            out.append(table.render())
            out.append("  both workers busy with `sleep 60` handler operations; time from the SIGKILL to the watch stream delivering")
            out.append("  the `ready` events of the killed worker's operations (the surviving worker is full, so they stay ready).")
            out.append("  The kill follows the worker's `started` reports at once, so its silence covers the whole liveness window:")
            out.append("  the worst case (a kill at a random point between heartbeats is noticed 0–1 s sooner).")
        }
        if !failures.isEmpty {
            out.append("")
            out.append("  failed:")
            for failure in failures { out.append("    " + (failure.split(separator: "\n").first.map(String.init) ?? failure)) }
        }
        if !targets.isEmpty {
            out.append("")
            var table = TextTable([.init("target", right: false), .init("goal", right: false),
                                   .init("measured", right: false), .init("verdict", right: false)])
            for target in targets { table.append([target.name, target.goal, target.measured, target.verdict]) }
            out.append(table.render())
        }
        return out.joined(separator: "\n")
    }

    /// The report as a JSON document.
    func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Microseconds as `123 µs`, or `1.23 ms` from a millisecond on.
    static func microseconds(_ value: Double) -> String {
        value >= 1_000 ? Format.fixed(value / 1_000, 2) + " ms" : Format.fixed(value, 0) + " µs"
    }
}
