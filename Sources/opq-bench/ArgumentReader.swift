#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the flags of one `opq-bench` mode by hand (the benchmark keeps its dependencies to the
/// measured code): values, positive integers, and a failure that prints the mode's usage and exits 2.
struct ArgumentReader {
    /// "opq-bench", "opq-bench cluster", …: starts every error message.
    let command: String
    let usage: String
    private var rest: ArraySlice<String>
    /// Flags that were given a value.
    private(set) var explicit: Set<String> = []

    init(_ arguments: [String], command: String, usage: String) {
        rest = arguments[...]
        self.command = command
        self.usage = usage
    }

    /// The next argument, or nil at the end.
    mutating func next() -> String? { rest.popFirst() }

    /// The value after `flag`.
    mutating func value(for flag: String) -> String {
        guard let value = rest.popFirst() else { fail("\(flag) needs a value") }
        explicit.insert(flag)
        return value
    }

    /// The value after `flag` as a positive integer (`_` separators allowed).
    mutating func positive(for flag: String) -> Int { positive(value(for: flag), flag) }

    /// `text` as a positive integer for `flag`.
    func positive(_ text: String, _ flag: String) -> Int {
        guard let number = Int(text.filter { $0 != "_" }), number > 0 else { fail("\(flag): '\(text)' is not a positive integer") }
        return number
    }

    /// The value after `flag` as an integer ≥ 0 (`_` separators allowed).
    mutating func nonNegative(for flag: String) -> Int {
        let text = value(for: flag)
        guard let number = Int(text.filter { $0 != "_" }), number >= 0 else { fail("\(flag): '\(text)' is not an integer ≥ 0") }
        return number
    }

    /// A comma-separated list of positive integers after `flag`.
    mutating func positives(for flag: String) -> [Int] {
        let text = value(for: flag)
        return text.split(separator: ",").map { positive(String($0), flag) }
    }

    /// `-h`/`--help`: prints the usage and exits 0; anything else unknown fails.
    func unknown(_ argument: String) -> Never {
        if argument == "-h" || argument == "--help" {
            print(usage)
            exit(0)
        }
        fail("unknown argument '\(argument)'")
    }

    func fail(_ message: String) -> Never {
        var standardError = StandardError()
        print("\(command): \(message)\n\n\(usage)", to: &standardError)
        exit(2)
    }
}
