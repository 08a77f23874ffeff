#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The command line of `opq-bench`, parsed by hand (swift-argument-parser is not a dependency yet).
struct Options {
    /// Operation counts to run, ascending.
    var sizes = [10_000, 100_000, 1_000_000]
    /// Shapes to run, in table order.
    var shapes = Shape.allCases
    /// Whether to run Foundation's `OperationQueue` beside the core.
    var foundation = true
    /// Whether to measure bytes per pending operation.
    var memory = true
    /// Print one JSON document instead of tables.
    var json = false
    /// Simulated workers and slots per worker.
    var workers = 4
    var slots = 8
    /// Whether simulated workers report `started` before `finished`.
    var reportsStarted = true
    /// Seconds allowed per shape for the core, and for Foundation.
    var coreBudget = 120.0
    var foundationBudget = 30.0
    /// Set by `--smoke`.
    var isSmoke = false

    static let usage = """
    usage: opq-bench [options]
           opq-bench cluster [--smoke] [--json] [--bin-dir DIR] ...   (real processes: opq-bench cluster --help)
           opq-bench map [--smoke] [--lines N] [--rounds R] ...        (opq map vs xargs and GNU parallel: opq-bench map --help)
      Measures the OPQCore scheduler (submit + dispatch + finish, on a simulated cluster) and Foundation's
      OperationQueue on the same graphs, and the core's bytes per pending operation.

      --smoke                 tiny sizes (1000,5000) and short budgets: a few seconds (CI)
      --sizes N,N,...         operation counts (default 10000,100000,1000000)
      --shapes S,S,...        independent, chain, fan-in, random-dag (default: all)
      --no-foundation         skip Foundation's OperationQueue
      --no-memory             skip the bytes-per-pending-operation table
      --no-started            workers report only `finished` (default: `started`, then `finished`)
      --workers N             simulated workers (default 4)
      --slots N               slots per worker (default 8); Foundation's width = workers × slots
      --budget SECONDS        time budget per shape for the core (default 120)
      --foundation-budget S   time budget per shape for Foundation (default 30)
      --json                  print one JSON document instead of tables
      -h, --help              this text
    """

    /// Parses `arguments` (without the program name); exits with a message on a mistake.
    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var reader = ArgumentReader(arguments, command: "opq-bench", usage: usage)
        while let argument = reader.next() {
            switch argument {
            case "--smoke": options.isSmoke = true
            case "--sizes":
                options.sizes = reader.positives(for: argument)
                if options.sizes.contains(where: { $0 < 2 }) { reader.fail("--sizes: every size must be at least 2") }
            case "--shapes":
                options.shapes = reader.value(for: argument).split(separator: ",").map {
                    guard let shape = Shape(flag: String($0)) else {
                        reader.fail("--shapes: unknown shape '\($0)' (known: \(Shape.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                    return shape
                }
            case "--no-foundation": options.foundation = false
            case "--no-memory": options.memory = false
            case "--no-started": options.reportsStarted = false
            case "--workers": options.workers = reader.positive(for: argument)
            case "--slots": options.slots = reader.positive(for: argument)
            case "--budget": options.coreBudget = Double(reader.positive(for: argument))
            case "--foundation-budget": options.foundationBudget = Double(reader.positive(for: argument))
            case "--json": options.json = true
            default: reader.unknown(argument)
            }
        }
        if options.isSmoke {
            if !reader.explicit.contains("--sizes") { options.sizes = [1_000, 5_000] }
            options.coreBudget = min(options.coreBudget, 10)
            options.foundationBudget = min(options.foundationBudget, 1)
        }
        options.sizes = Array(Set(options.sizes)).sorted()
        var seen = Set<Shape>()
        options.shapes = options.shapes.filter { seen.insert($0).inserted }
        return options
    }
}

/// Writes to the standard error stream.
struct StandardError: TextOutputStream {
    mutating func write(_ string: String) { writeToStandardError(string) }
}

/// Writes all of `string` to file descriptor 2.
private func writeToStandardError(_ string: String) {
    var bytes = Array(string.utf8)
    var written = 0
    while written < bytes.count {
        let result = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + written, $0.count - written) }
        guard result > 0 else { return }
        written += result
    }
}
