import Foundation

/// `opq-bench cluster`: the measurements of ``ClusterBenchmark`` on real processes, one after another;
/// a measurement that fails is reported (with the processes' logs on standard error) and the others run.
enum ClusterCommand {
    /// Runs the cluster mode with `arguments` (after `cluster`); returns the exit status: 0 when every
    /// measurement completed (targets missed or not), 1 when one failed, 2 when nothing could start.
    static func run(_ arguments: [String]) -> Int32 {
        let options = ClusterOptions.parse(arguments)
        let started = Clock.nanoseconds()
        func progress(_ step: String) {
            var standardError = StandardError()
            print("[\(Format.fixed(Clock.seconds(Clock.nanoseconds() - started), 1)) s] \(step)", to: &standardError)
        }
        let binaries: Binaries
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("opq-bench-\(getpid())-\(UUID().uuidString.prefix(8))")
        do {
            binaries = try Binaries.locate(options.binDirectory)
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        } catch {
            var standardError = StandardError()
            print("opq-bench cluster: \(error)", to: &standardError)
            return 2
        }
        defer {
            ChildProcess.killAll()
            if options.keepLogs {
                progress("logs kept in \(scratch.path)")
            } else {
                try? FileManager.default.removeItem(at: scratch)
            }
        }

        let benchmark = ClusterBenchmark(options: options, binaries: binaries, scratch: scratch)
        var report = ClusterReport(machine: .current(), binaries: binaries.directory, workers: options.workers)
        report.loadAtStart = ClusterReport.loadAverage()
        func attempt<T>(_ name: String, _ body: () throws -> T) -> T? {
            do {
                return try body()
            } catch {
                var standardError = StandardError()
                print("opq-bench cluster: \(name) failed: \(error)", to: &standardError)
                report.failures.append("\(name): \(error)")
                return nil
            }
        }
        report.throughput = attempt("throughput") { try benchmark.throughput(progress: progress) } ?? []
        report.latency = attempt("latency") { try benchmark.latency(progress: progress) }
        report.chain = attempt("chain") { try benchmark.chain(progress: progress) }
        if options.oneProcess {
            report.oneProcessLatency = attempt("latency (one process)") { try benchmark.latency(topology: .oneProcess, progress: progress) }
            report.oneProcessChain = attempt("chain (one process)") { try benchmark.chain(topology: .oneProcess, progress: progress) }
            if options.spinBaseline {
                report.noSpinLatency = attempt("latency (one process, --spin 0)") { try benchmark.latency(topology: .oneProcessNoSpin, progress: progress) }
                report.noSpinChain = attempt("chain (one process, --spin 0)") { try benchmark.chain(topology: .oneProcessNoSpin, progress: progress) }
            }
        }
        if options.commandOperations > 0 { report.commands = attempt("commands") { try benchmark.commands(progress: progress) } }
        if options.dashboard { report.dashboard = attempt("dashboard") { try benchmark.dashboard(progress: progress) } }
        if options.failover { report.failover = attempt("failover") { try benchmark.failover(progress: progress) } }
        report.runSeconds = Clock.seconds(Clock.nanoseconds() - started)
        report.loadAtEnd = ClusterReport.loadAverage()
        report.judge()
        print(options.json ? report.json() : report.text())
        progress("done")
        return report.failures.isEmpty ? 0 : 1
    }
}
