import Foundation

/// No-op throughput with the coordinator's HTTP side busy (`--http`, `/metrics` scraped every second by
/// curl, the dashboard's event stream open) against the same cluster without `--http`, in alternating
/// rounds of one run, so both see the same machine load.
struct ClusterDashboard: Codable {
    var slotsPerWorker: Int
    var operations: Int
    /// Throughput of each round, without and with the dashboard.
    var plainOperationsPerSecond: [Double]
    var dashboardOperationsPerSecond: [Double]
    /// `/metrics` scrapes answered and event-stream bytes received during the dashboard rounds.
    var scrapes: Int
    var streamBytes: Int
    /// Median with the dashboard over median without.
    var ratio: Double
}

extension ClusterBenchmark {
    /// Rounds of the comparison (each round: one run without, one with); one at `--smoke`.
    var dashboardRounds: Int { options.isSmoke ? 1 : 3 }

    /// Measures ``ClusterDashboard`` at the middle slot count asked for.
    func dashboard(progress: (String) -> Void) throws -> ClusterDashboard {
        let slots = options.slotCounts[options.slotCounts.count / 2]
        let submission = Workload(.independent, size: options.throughputOperations).submission()
        let warmUp = Workload(.independent, size: min(2_000, options.throughputOperations)).submission()
        var plain: [Double] = []
        var withDashboard: [Double] = []
        var scrapes = 0
        var streamBytes = 0
        for round in 1...dashboardRounds {
            for http in [false, true] {
                progress("dashboard round \(round)/\(dashboardRounds): \(options.workers) workers × \(slots) slots, "
                         + "\(Format.size(options.throughputOperations)) no-ops, " + (http ? "with --http, scraped and streamed" : "without --http"))
                let cluster = try LocalCluster(binaries: binaries, parent: scratch, name: "dashboard-\(round)-\(http ? "on" : "off")")
                defer { cluster.stop() }
                try cluster.startCoordinator(http: http)
                let client = try cluster.connect()
                try cluster.startWorkers(options.workers, slots: slots, client: client)
                _ = try runJob(warmUp, count: warmUp.operations.count, client: client, cluster: cluster)
                var readers: [ChildProcess] = []
                defer { for reader in readers { reader.stop() } }
                let streamPath = cluster.directory.appendingPathComponent("events.txt").path
                if http {
                    guard let url = cluster.httpURL else { throw ClusterBenchError("the coordinator printed no http= address\n\(cluster.logs)") }
                    readers.append(try ChildProcess("/bin/sh", ["-c", "while :; do curl -sf -o /dev/null \"$0/metrics\" && echo scraped; sleep 1; done", url],
                                                    name: "scraper", directory: cluster.directory))
                    readers.append(try ChildProcess("/usr/bin/curl", ["-sN", "-o", streamPath, "\(url)/api/events"],
                                                    name: "stream", directory: cluster.directory))
                }
                let (seconds, _) = try runJob(submission, count: options.throughputOperations, client: client, cluster: cluster)
                let rate = Double(options.throughputOperations) / seconds
                if http {
                    withDashboard.append(rate)
                    scrapes += readers[0].output.components(separatedBy: "scraped").count - 1
                    streamBytes += ((try? FileManager.default.attributesOfItem(atPath: streamPath)[.size]) as? Int) ?? 0
                } else {
                    plain.append(rate)
                }
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        return ClusterDashboard(
            slotsPerWorker: slots, operations: options.throughputOperations, plainOperationsPerSecond: plain,
            dashboardOperationsPerSecond: withDashboard, scrapes: scrapes, streamBytes: streamBytes,
            ratio: median(withDashboard) / median(plain))
    }
}
