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
        var explicitSizes = false
        var rest = arguments[...]
        func value(for flag: String) -> String {
            guard let value = rest.popFirst() else { fail("\(flag) needs a value") }
            return value
        }
        func positive(_ text: String, _ flag: String) -> Int {
            guard let number = Int(text.replacingUnderscores()), number > 0 else { fail("\(flag): '\(text)' is not a positive integer") }
            return number
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--smoke": options.isSmoke = true
            case "--sizes":
                explicitSizes = true
                options.sizes = value(for: argument).split(separator: ",").map { positive(String($0), argument) }
                if options.sizes.contains(where: { $0 < 2 }) { fail("--sizes: every size must be at least 2") }
            case "--shapes":
                options.shapes = value(for: argument).split(separator: ",").map {
                    guard let shape = Shape(flag: String($0)) else {
                        fail("--shapes: unknown shape '\($0)' (known: \(Shape.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                    return shape
                }
            case "--no-foundation": options.foundation = false
            case "--no-memory": options.memory = false
            case "--no-started": options.reportsStarted = false
            case "--workers": options.workers = positive(value(for: argument), argument)
            case "--slots": options.slots = positive(value(for: argument), argument)
            case "--budget": options.coreBudget = Double(positive(value(for: argument), argument))
            case "--foundation-budget": options.foundationBudget = Double(positive(value(for: argument), argument))
            case "--json": options.json = true
            case "-h", "--help":
                print(usage)
                exit(0)
            default: fail("unknown argument '\(argument)'")
            }
        }
        if options.isSmoke {
            if !explicitSizes { options.sizes = [1_000, 5_000] }
            options.coreBudget = min(options.coreBudget, 10)
            options.foundationBudget = min(options.foundationBudget, 1)
        }
        options.sizes = Array(Set(options.sizes)).sorted()
        var seen = Set<Shape>()
        options.shapes = options.shapes.filter { seen.insert($0).inserted }
        return options
    }

    private static func fail(_ message: String) -> Never {
        var standardError = StandardError()
        print("opq-bench: \(message)\n\n\(usage)", to: &standardError)
        exit(2)
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

private extension String {
    /// `1_000_000` → `1000000`, so sizes can be written readably.
    func replacingUnderscores() -> String { filter { $0 != "_" } }
}
