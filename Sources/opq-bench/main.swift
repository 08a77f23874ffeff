// opq-bench: how fast and how small the scheduling core is, beside Foundation's OperationQueue.
// It prints figures; it is not a test. `opq-bench --help` lists the flags; `--smoke` is what CI runs.
// `opq-bench cluster` measures real opq-coordinator and opq-worker processes instead (ClusterCommand);
// `opq-bench map` times `opq map --local` against xargs and GNU parallel (MapBenchmark);
// `opq-bench cancel` times cancel, timeout and kill escalation, idle vs saturated (CancelBenchmark);
// `opq-bench prune` times `opq prune` in the core, walking the finish order vs scanning (PruneBenchmark);
// `opq-bench wire` times encoding, framing and decoding hot-path messages beside JSON (WireBenchmark);
// `opq-bench jobfile` times accepting a big job file, phase by phase, beside GNU parallel (JobFileBenchmark);
// `opq-bench start` times one short `opq` command (status, --version) beside /bin/true (StartBenchmark).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "cluster" {
    exit(ClusterCommand.run(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "cancel" {
    exit(CancelBenchmark.run(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "wire" {
    exit(WireBenchmark.run(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "prune" {
    exit(PruneBenchmark.run(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "jobfile" {
    exit(JobFileBenchmark.run(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "start" {
    exit(StartBenchmark.run(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "map" {
    exit(MapBenchmark.run(Array(CommandLine.arguments.dropFirst(2))))
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let benchmark = Benchmark(options: options)
let started = Clock.nanoseconds()

/// Progress goes to standard error, so the table (or JSON) on standard output stays clean.
func progress(_ step: String) {
    let elapsed = Clock.seconds(Clock.nanoseconds() - started)
    var standardError = StandardError()
    print("[\(Format.fixed(elapsed, 1)) s] \(step)", to: &standardError)
}

let throughput = benchmark.throughput(progress: progress)
let memory = options.memory ? benchmark.memory(progress: progress) : []
var report = Report(machine: .current(), workers: options.workers, slotsPerWorker: options.slots,
                    reportsStarted: options.reportsStarted, memorySource: Memory.source.rawValue,
                    throughput: throughput, memory: memory)
report.judge()
print(options.json ? report.json() : report.text())
progress("done")
