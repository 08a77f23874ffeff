import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire

/// `opq-bench cancel`: how long a cancel, a timeout kill and the SIGTERM → SIGKILL escalation take to end
/// a running command's whole process group, on an idle machine and on one saturated by CPU-bound
/// commands and a busy coordinator, side by side (issue: deadlines on a saturated machine).
///
/// Each sample runs one real command with a grandchild on a real coordinator and worker and times it
/// from the client's side: cancel request sent → `finished` event received (for the escalation, minus
/// the grace period; for the timeout, the coordinator's executing → finished timestamps minus the
/// timeout). A `finished` event means the worker reaped every member of the group. The saturated run
/// adds `2 × cores` `sha256sum /dev/zero` operations at the default QoS on the same worker and a client
/// submitting empty jobs as fast as the coordinator answers.
enum CancelBenchmark {
    static let usage = """
        usage: opq-bench cancel [--samples N] [--grace SECONDS] [--hogs N] [--bin-dir DIR] [--keep-logs] [--smoke]

          --samples N      samples per measurement and load (default 30; --smoke: 3)
          --grace SECONDS  kill grace for the escalation measurement (default 0.5)
          --hogs N         CPU-bound commands in the saturated run (default 2 × cores)
          --bin-dir DIR    where opq-coordinator and opq-worker are (default: beside opq-bench)
          --keep-logs      keep the processes' logs
          --smoke          a tiny run that checks the benchmark works (CI)

        Bounds (SEMANTICS §5, §7): cancel → group dead within 1 s; escalation within grace + 0.5 s.
        """

    struct Options {
        var samples = 30
        var grace = 0.5
        var hogs = 2 * ProcessInfo.processInfo.activeProcessorCount
        var binDirectory: String?
        var keepLogs = false
    }

    /// The samples of one measurement under one load, in seconds.
    struct Samples {
        var values: [Double] = []
        func percentile(_ p: Double) -> Double {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return .nan }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p / 100).rounded(.up)) - 1)]
        }
    }

    static func parse(_ arguments: [String]) -> Options {
        var reader = ArgumentReader(arguments, command: "opq-bench cancel", usage: usage)
        var options = Options()
        var smoke = false
        while let argument = reader.next() {
            switch argument {
            case "--samples": options.samples = reader.positive(for: argument)
            case "--hogs": options.hogs = reader.positive(for: argument)
            case "--grace":
                let text = reader.value(for: argument)
                guard let grace = Double(text), Limits.isValidDuration(grace, positive: true), grace <= 60 else {
                    reader.fail("--grace: '\(text)' is not a number of seconds from 0 to 60")
                }
                options.grace = grace
            case "--bin-dir": options.binDirectory = reader.value(for: argument)
            case "--keep-logs": options.keepLogs = true
            case "--smoke": smoke = true
            default: reader.unknown(argument)
            }
        }
        if smoke && !reader.explicit.contains("--samples") { options.samples = 3 }
        return options
    }

    static func run(_ arguments: [String]) -> Int32 {
        let options = parse(arguments)
        var standardError = StandardError()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("opq-bench-cancel-\(getpid())")
        let binaries: Binaries
        do {
            binaries = try Binaries.locate(options.binDirectory)
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        } catch {
            print("opq-bench cancel: \(error)", to: &standardError)
            return 2
        }
        defer {
            ChildProcess.killAll()
            if !options.keepLogs { try? FileManager.default.removeItem(at: scratch) }
        }
        do {
            let idle = try measure(options, saturated: false, binaries: binaries, scratch: scratch)
            let saturated = try measure(options, saturated: true, binaries: binaries, scratch: scratch)
            print(report(options, idle: idle, saturated: saturated))
            return 0  // like `opq-bench cluster`: bounds are judged in the table; 1 only when a measurement failed
        } catch {
            print("opq-bench cancel: \(error)", to: &standardError)
            return 1
        }
    }

    struct Run {
        var cancel = Samples()
        var escalation = Samples()
        var timeout = Samples()
        var lostWorkers = 0
    }

    /// One cluster, `samples` of each measurement, with or without the saturating load.
    static func measure(_ options: Options, saturated: Bool, binaries: Binaries, scratch: URL) throws -> Run {
        var standardError = StandardError()
        print("cancel: \(saturated ? "saturated (\(options.hogs) CPU-bound commands + a busy coordinator)" : "idle"), \(options.samples) samples each",
              to: &standardError)
        let cluster = try LocalCluster(binaries: binaries, parent: scratch, name: saturated ? "saturated" : "idle")
        defer { cluster.stop() }
        try cluster.startCoordinator(extraArguments: ["--kill-grace", String(options.grace)])
        let client = try cluster.connect()
        try cluster.startWorkers(1, slots: options.hogs + 2, client: client)
        let stream = try cluster.connect()
        try stream.request { $0.watch.all = Opq_V1_All() }

        let stopLoad = Flag()
        if saturated {
            let hog = OperationSpec(queue: "hogs", work: .command(Command(["sha256sum", "/dev/zero"])))
            _ = try client.submit(Submission(Array(repeating: hog, count: options.hogs)))
            let endpoint = cluster.clientsEndpoint
            let thread = Thread {
                guard let busy = try? CoordinatorConnection(endpoint: endpoint) else { return }
                let empty = Submission([OperationSpec(queue: "busy")])
                while !stopLoad.isSet { _ = try? busy.submit(empty) }
            }
            thread.start()
        }
        defer { stopLoad.set() }  // the load thread ends after its current request

        var run = Run()
        let grandchild = "sleep 1000 & sleep 1000"
        for _ in 0..<options.samples {
            run.cancel.values.append(try cancelSample(client, stream, script: grandchild, cluster: cluster))
            run.escalation.values.append(
                try cancelSample(client, stream, script: "trap '' TERM; \(grandchild)", cluster: cluster) - options.grace)
            run.timeout.values.append(try timeoutSample(client, stream, seconds: 0.2, cluster: cluster))
        }
        let log = (cluster.coordinator?.tail(10_000) ?? "")
        run.lostWorkers = log.components(separatedBy: "worker lost").count - 1
        return run
    }

    /// Starts `script`, waits until it executes, cancels it; seconds from the cancel to its `finished` event.
    static func cancelSample(_ client: CoordinatorConnection, _ stream: CoordinatorConnection, script: String,
                             cluster: LocalCluster) throws -> Double {
        let id = OperationID(try client.submit(Submission([OperationSpec(work: .command(Command(["/bin/sh", "-c", script])))])).operations[0])
        _ = try awaitState(.executing, of: id, stream, cluster: cluster)
        let sent = Clock.nanoseconds()
        _ = try client.request { $0.cancel.operation = id.rawValue }
        let finished = try awaitState(.finished, of: id, stream, cluster: cluster)
        guard finished.outcome == .cancelled else {
            throw ClusterBenchError("\(id) finished \(finished.outcome) instead of cancelled\n\(cluster.logs)")
        }
        return Clock.seconds(Clock.nanoseconds() - sent)
    }

    /// Runs `sleep 1000` with a timeout of `seconds`; how much later than the timeout it finished
    /// (the coordinator's executing → finished timestamps).
    static func timeoutSample(_ client: CoordinatorConnection, _ stream: CoordinatorConnection, seconds: Double,
                              cluster: LocalCluster) throws -> Double {
        let spec = OperationSpec(work: .command(Command(["sleep", "1000"])), timeout: seconds)
        let id = OperationID(try client.submit(Submission([spec])).operations[0])
        let executing = try awaitState(.executing, of: id, stream, cluster: cluster)
        let finished = try awaitState(.finished, of: id, stream, cluster: cluster)
        return finished.time - executing.time - seconds
    }

    /// The next event of `id` in `state` on the watch stream (60 s at most).
    static func awaitState(_ state: Opq_V1_OperationState, of id: OperationID, _ stream: CoordinatorConnection,
                           cluster: LocalCluster) throws -> Opq_V1_OperationEvent {
        let deadline = Clock.nanoseconds() + 60_000_000_000
        while true {
            guard let events = try stream.nextOperationEvents(until: deadline) else {
                throw ClusterBenchError("\(id) did not reach \(state) within 60 s\n\(cluster.logs)")
            }
            if let event = events.first(where: { $0.operation == id.rawValue && $0.state == state }) { return event }
        }
    }

    static func report(_ options: Options, idle: Run, saturated: Run) -> String {
        func ms(_ seconds: Double) -> String { Format.fixed(seconds * 1000, 1) }
        var table = TextTable([.init("measurement", right: false), .init("idle p50 ms"), .init("idle p99 ms"),
                               .init("saturated p50 ms"), .init("saturated p99 ms"), .init("bound ms"), .init("verdict", right: false)])
        let rows: [(String, Samples, Samples, Double)] = [
            ("cancel → group reaped", idle.cancel, saturated.cancel, 1),
            ("escalation beyond grace", idle.escalation, saturated.escalation, 0.5),
            ("timeout kill beyond timeout", idle.timeout, saturated.timeout, 1),
        ]
        for (name, a, b, bound) in rows {
            table.append([name, ms(a.percentile(50)), ms(a.percentile(99)), ms(b.percentile(50)), ms(b.percentile(99)),
                          ms(bound), Format.verdict(b.percentile(100) < bound)])
        }
        return """
            opq-bench cancel: \(options.samples) samples per cell (p99 of fewer than 100 samples is the maximum), \
            grace \(options.grace) s, saturated = \(options.hogs) × sha256sum /dev/zero (default QoS) + a client \
            submitting empty jobs in a loop; load average \(ClusterReport.loadAverage().map { Format.fixed($0, 2) } ?? "n/a")
            \(table.render())
              workers declared lost while saturated: \(saturated.lostWorkers) (idle: \(idle.lostWorkers))
            """
    }
}

/// A flag one thread sets and another reads.
// @unchecked Sendable: `value` is guarded by `lock`.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
