import Foundation

/// No-op throughput with the coordinator's HTTP side busy (`--http`, `/metrics` scraped every second by
/// curl, the dashboard's event stream open) against the same cluster without `--http`.
///
/// Made to be trusted on a noisy, shared machine: rounds alternate their order (without → with, then
/// with → without, …) so a drift in the machine's load falls on both sides; each round gives a paired
/// ratio (with / without, minutes apart at most), and the verdict is the median of those ratios, shown
/// with their spread. Beside it, the coordinator's own account of what `--http` cost its loop (seconds
/// spent reading events and building snapshots, over the run's seconds), which load does not blur.
struct ClusterDashboard: Codable {
    var slotsPerWorker: Int
    var operations: Int
    /// Throughput of each round, without and with the dashboard.
    var plainOperationsPerSecond: [Double]
    var dashboardOperationsPerSecond: [Double]
    /// With / without, per round.
    var pairedRatios: [Double]
    /// `/metrics` scrapes answered and event-stream bytes received during the dashboard rounds.
    var scrapes: Int
    var streamBytes: Int
    /// Per dashboard round: the share of the run's wall time the coordinator's loop spent on telemetry
    /// (`telemetrySeconds` before and after the run, over the run's seconds), and snapshots built.
    var loopShares: [Double]
    var snapshots: [UInt64]
    /// The coordinator process's CPU time (all its threads: loop and HTTP server) per operation, in µs,
    /// per round, without and with the dashboard: what `--http` costs in CPU, which load blurs far less
    /// than throughput.
    var plainCPUMicroseconds: [Double]
    var dashboardCPUMicroseconds: [Double]
    /// The median of ``pairedRatios``: the verdict.
    var ratio: Double
}

extension ClusterBenchmark {
    /// Rounds of the comparison (each round: one run without, one with); one at `--smoke`.
    var dashboardRounds: Int { options.isSmoke ? 1 : 5 }

    /// Measures ``ClusterDashboard`` at the middle slot count asked for.
    func dashboard(progress: (String) -> Void) throws -> ClusterDashboard {
        let slots = options.slotCounts[options.slotCounts.count / 2]
        let submission = Workload(.independent, size: options.throughputOperations).submission()
        let warmUp = Workload(.independent, size: min(2_000, options.throughputOperations)).submission()
        var plain: [Double] = []
        var withDashboard: [Double] = []
        var scrapes = 0
        var streamBytes = 0
        var loopShares: [Double] = []
        var snapshots: [UInt64] = []
        var plainCPU: [Double] = []
        var dashboardCPU: [Double] = []
        for round in 1...dashboardRounds {
            // Alternate which runs first, so a machine getting busier or quieter does not favour one side.
            for http in Rounds.order([false, true], round: round) {
                progress("dashboard round \(round)/\(dashboardRounds): \(options.workers) workers × \(slots) slots, "
                         + "\(Format.size(options.throughputOperations)) no-ops, " + (http ? "with --http, scraped and streamed" : "without --http"))
                let cluster = try LocalCluster(binaries: binaries, parent: scratch, name: "dashboard-\(round)-\(http ? "on" : "off")")
                defer { cluster.stop() }
                try cluster.startCoordinator(http: http)
                let client = try cluster.connect()
                try cluster.startWorkers(options.workers, slots: slots, client: client)
                _ = try runJob(warmUp, count: warmUp.operations.count, client: client, cluster: cluster)
                var readers: [ChildProcess] = []
                defer { for reader in readers { reader.kill() } }
                let streamPath = cluster.directory.appendingPathComponent("events.txt").path
                var before: TelemetryTotals?
                if http {
                    guard let url = cluster.httpURL else { throw ClusterBenchError("the coordinator printed no http= address\n\(cluster.logs)") }
                    readers.append(try ChildProcess("/bin/sh", ["-c", "while :; do curl -sf -o /dev/null \"$0/metrics\" && echo scraped; sleep 1; done", url],
                                                    name: "scraper", directory: cluster.directory))
                    readers.append(try ChildProcess("/usr/bin/curl", ["-sN", "-o", streamPath, "\(url)/api/events"],
                                                    name: "stream", directory: cluster.directory))
                    before = TelemetryTotals(url)
                }
                let cpuBefore = cluster.coordinator?.cpuSeconds
                let (seconds, _) = try runJob(submission, count: options.throughputOperations, client: client, cluster: cluster)
                let rate = Double(options.throughputOperations) / seconds
                if let cpuBefore, let cpuAfter = cluster.coordinator?.cpuSeconds {
                    let perOperation = (cpuAfter - cpuBefore) / Double(options.throughputOperations) * 1e6
                    if http { dashboardCPU.append(perOperation) } else { plainCPU.append(perOperation) }
                }
                if http {
                    withDashboard.append(rate)
                    scrapes += readers[0].output.components(separatedBy: "scraped").count - 1
                    streamBytes += ((try? FileManager.default.attributesOfItem(atPath: streamPath)[.size]) as? Int) ?? 0
                    if let before, let url = cluster.httpURL, let after = TelemetryTotals(url) {
                        loopShares.append((after.seconds - before.seconds) / seconds)
                        snapshots.append(after.snapshots &- before.snapshots)
                    }
                } else {
                    plain.append(rate)
                }
            }
        }
        let paired = zip(withDashboard, plain).map { $0 / $1 }
        return ClusterDashboard(
            slotsPerWorker: slots, operations: options.throughputOperations, plainOperationsPerSecond: plain,
            dashboardOperationsPerSecond: withDashboard, pairedRatios: paired, scrapes: scrapes, streamBytes: streamBytes,
            loopShares: loopShares, snapshots: snapshots, plainCPUMicroseconds: plainCPU, dashboardCPUMicroseconds: dashboardCPU,
            ratio: Statistics.median(paired))
    }
}

/// Medians, for the benchmark's verdicts.
enum Statistics {
    /// The median (the mean of the middle two for an even count); 0 for none.
    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}

/// The coordinator's account of its telemetry work, from `/api/totals`.
struct TelemetryTotals {
    /// Seconds its loop spent reading events and building snapshots since start.
    var seconds: Double
    /// Snapshots built since start.
    var snapshots: UInt64

    /// Reads them from the coordinator serving `url`; nil when it does not answer.
    init?(_ url: String) {
        guard let curl = try? ChildProcess("/usr/bin/curl", ["-sf", "--max-time", "10", "\(url)/api/totals"], stdout: .capture),
              curl.finish(within: 30) != nil else { return nil }
        let data = Data(curl.outputBytes)
        guard let totals = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let seconds = totals["telemetrySeconds"] as? Double,
              let snapshots = (totals["snapshotBuild"] as? [String: Any])?["count"] as? Int else { return nil }
        self.seconds = seconds
        self.snapshots = UInt64(snapshots)
    }
}
