import Foundation

/// The command line of `opq-bench cluster`, parsed by hand like ``Options``.
struct ClusterOptions {
    /// Where `opq-coordinator` and `opq-worker` are (default: beside this executable).
    var binDirectory: String?
    /// No-op operations per throughput run, and the slot counts per worker to try.
    var throughputOperations = 100_000
    var slotCounts = [8, 64, 256]
    /// Operations submitted one at a time for the dispatch-latency percentiles.
    var latencyOperations = 2_000
    /// Length of the dependency chain run across processes and on Foundation's `OperationQueue`.
    var chainOperations = 20_000
    /// Whether to run Foundation's `OperationQueue` on the chain.
    var foundation = true
    /// Whether to measure the requeue time after `kill -9` of a worker (takes ~3 s of waiting).
    var failover = true
    /// Whether to compare throughput with the coordinator's `--http` scraped and streamed against without.
    var dashboard = true
    /// Workers started for every measurement.
    var workers = 2
    /// Print one JSON document instead of tables.
    var json = false
    /// Keep the temporary directory (sockets, process logs) instead of removing it.
    var keepLogs = false
    /// Set by `--smoke`.
    var isSmoke = false
    /// Also measure throughput with the journal fsynced on every commit (at the largest slot count).
    var fsyncAlways = true
    /// Also measure throughput over loopback TCP without and with CURVE, side by side, at the largest slot count.
    var curve = false
    /// Also measure throughput, latency and the chain on the one-process cluster (`opq-coordinator
    /// --local-workers`, what `opq run` starts), beside the separate processes.
    var oneProcess = true
    /// Also measure the one-process cluster with `--spin 0`, beside its default (`--no-spin-baseline`).
    var spinBaseline = true
    /// `true` commands for the command run (the worker's per-command path); 0 = skip it (`--no-commands`).
    var commandOperations = 2_000

    static let usage = """
    usage: opq-bench cluster [options]
      Starts a real opq-coordinator and opq-worker processes over ipc:// in a fresh temporary directory and
      measures, in one run: no-op throughput (best over slot counts), dispatch latency ready → executing
      (p50/p99), a dependency chain across processes against Foundation's OperationQueue, and the time from
      kill -9 of a worker to its operations being requeued. Every process started is killed on exit.
      The coordinator journals as in production (its default sync level, `--fsync normal`); throughput is
      also measured with `--fsync always` at the largest slot count, to show what power-loss durability costs.

      --smoke                 small sizes (2000 ops, 1000-op chain, 200 latency samples): seconds (CI)
      --bin-dir DIR           where opq-coordinator and opq-worker are (default: beside opq-bench); an
                              `opq-coordinator` there may be a script exec'ing `valgrind --tool=callgrind` on
                              the real one (set OPQ_BENCH_STARTUP_SECONDS=120: it starts slowly)
      --ops N                 no-op operations per throughput run (default 100000)
      --slots N,N,...         slots per worker to try for throughput (default 8,64,256)
      --latency-ops N         operations submitted one at a time for latency (default 2000)
      --chain N               chain length (default 20000)
      --workers N             opq-worker processes (default 2)
      --no-foundation         skip Foundation's OperationQueue on the chain
      --no-failover           skip the kill -9 requeue measurement
      --no-fsync-always       skip the throughput run with the coordinator's --fsync always
      --no-dashboard          skip the comparison with --http on (/metrics scraped every second, event stream open)
      --commands N            `true` commands for the command run: rate, workers' CPU per command, a worker's
                              threads idle and with 8 commands running (default 2000)
      --no-commands           skip the command run
      --no-one-process        skip the one-process cluster (opq-coordinator --local-workers N: the workers on threads
                              of the coordinator on direct links, what `opq run` starts), measured by default beside the
                              separate processes for throughput, latency and the chain
      --no-spin-baseline      skip the one-process cluster with --spin 0 (its event loops sleeping at once instead
                              of polling up to 50 µs for handlers' finishes), measured by default beside it
      --curve                 also measure throughput over loopback TCP, without and with CURVE (encryption and
                              key authentication), at the largest slot count
      --keep-logs             keep the temporary directory with the processes' logs
      --json                  print one JSON document instead of tables
      -h, --help              this text
    """

    /// Parses `arguments` (after `cluster`); exits with a message on a mistake.
    static func parse(_ arguments: [String]) -> ClusterOptions {
        var options = ClusterOptions()
        var reader = ArgumentReader(arguments, command: "opq-bench cluster", usage: usage)
        while let argument = reader.next() {
            switch argument {
            case "--smoke": options.isSmoke = true
            case "--bin-dir": options.binDirectory = reader.value(for: argument)
            case "--ops": options.throughputOperations = reader.positive(for: argument)
            case "--slots": options.slotCounts = reader.positives(for: argument)
            case "--latency-ops": options.latencyOperations = reader.positive(for: argument)
            case "--chain":
                options.chainOperations = reader.positive(for: argument)
                if options.chainOperations < 2 { reader.fail("--chain: a chain needs at least 2 operations") }
            case "--workers": options.workers = reader.positive(for: argument)
            case "--no-foundation": options.foundation = false
            case "--no-failover": options.failover = false
            case "--no-fsync-always": options.fsyncAlways = false
            case "--no-dashboard": options.dashboard = false
            case "--curve": options.curve = true
            case "--no-one-process": options.oneProcess = false
            case "--no-spin-baseline": options.spinBaseline = false
            case "--commands": options.commandOperations = reader.positive(for: argument)
            case "--no-commands": options.commandOperations = 0
            case "--keep-logs": options.keepLogs = true
            case "--json": options.json = true
            default: reader.unknown(argument)
            }
        }
        if options.isSmoke {
            if !reader.explicit.contains("--ops") { options.throughputOperations = 2_000 }
            if !reader.explicit.contains("--latency-ops") { options.latencyOperations = 200 }
            if !reader.explicit.contains("--chain") { options.chainOperations = 1_000 }
            if !reader.explicit.contains("--commands") { options.commandOperations = 200 }
        }
        if options.failover && options.workers < 2 { reader.fail("--workers: the kill -9 measurement needs at least 2 workers (or --no-failover)") }
        options.slotCounts = Array(Set(options.slotCounts)).sorted()
        return options
    }
}
