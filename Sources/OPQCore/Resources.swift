/// What an operation needs of one worker while it runs: `cpus` and `memory` (job files' `cpus:` and
/// `memory:`, issue 16). A worker announces its capacity in the same terms; the core dispatches an
/// operation only to a worker whose running operations leave enough of both free (README "Resources").
public struct Resources: Hashable, Sendable, CustomStringConvertible {
    /// CPUs (whole cores), 1 to ``Limits/maxCpus``. A command is not confined to them: this is
    /// accounting, as Slurm's `--cpus-per-task` without cgroups.
    public var cpus: Int
    /// Bytes of memory, 0 (needs none, the default) to ``Limits/maxMemory``.
    public var memory: Int

    /// One CPU and no memory: what an operation needs unless it says otherwise.
    public static let `default` = Resources(cpus: 1, memory: 0)

    /// Creates a demand of `cpus` CPUs and `memory` bytes.
    public init(cpus: Int = 1, memory: Int = 0) {
        self.cpus = cpus
        self.memory = memory
    }

    /// `4 cpus`, `1 cpu and 2G of memory`: as `opq show` prints a demand.
    public var description: String {
        let cores = cpus == 1 ? "1 cpu" : "\(cpus) cpus"
        return memory == 0 ? cores : "\(cores) and \(ByteSize.format(memory)) of memory"
    }

    /// Why ``cpus`` is refused, as "must be …, not …", or nil when it is from 1 to ``Limits/maxCpus``.
    public var cpusProblem: String? {
        (1...Limits.maxCpus).contains(cpus) ? nil : "must be a whole number from 1 to \(Limits.maxCpus), not \(cpus)"
    }

    /// Why ``memory`` is refused, as "must be …, not …", or nil when it is from 0 to ``Limits/maxMemory``.
    public var memoryProblem: String? {
        (0...Limits.maxMemory).contains(memory) ? nil
            : "must be from 0 to \(ByteSize.format(Limits.maxMemory)) (\(Limits.maxMemory) bytes), not \(memory) bytes"
    }
}

/// Byte sizes as users write them (`memory: 2G`, `opq-worker --memory 16G`): one parser for every edge.
public enum ByteSize {
    /// Multipliers of the unit letters: powers of 1024, as `free -h` and Slurm's `--mem` read them.
    static let units: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50]

    /// The bytes of `text`: a whole number of bytes (`1048576`), or a number with a unit letter K, M, G,
    /// T or P (powers of 1024, case-insensitive, optionally followed by `B` or `iB`: `512M`, `2G`, `1.5GiB`).
    /// Nil when the text is anything else, negative, or more than `Int.max` bytes.
    public static func bytes(parsing text: String) -> Int? {
        var number = Substring(String(text.trimmingWhitespace).uppercased())
        if number.hasSuffix("IB") {
            number = number.dropLast(2)
            guard let last = number.last, units[last] != nil else { return nil }
        } else if number.hasSuffix("B") {
            number = number.dropLast()
        }
        var factor = 1
        if let last = number.last, let unit = units[last] {
            factor = unit
            number = number.dropLast()
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }) else { return nil }
        if let whole = Int(number) {
            let (bytes, overflow) = whole.multipliedReportingOverflow(by: factor)
            return overflow ? nil : bytes
        }
        guard factor > 1, let value = Double(number), value.isFinite else { return nil }
        let bytes = (value * Double(factor)).rounded(.down)
        return bytes < 0x1p63 ? Int(bytes) : nil
    }

    /// `2G`, `1536M`, `100` (bytes): the largest unit that divides `bytes` exactly.
    public static func format(_ bytes: Int) -> String {
        for (letter, unit) in units.sorted(by: { $0.value > $1.value }) where bytes >= unit && bytes % unit == 0 {
            return "\(bytes / unit)\(letter)"
        }
        return "\(bytes)"
    }
}

extension String {
    /// The text without leading and trailing spaces and tabs (OPQCore does not import Foundation).
    fileprivate var trimmingWhitespace: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[first...last]
    }
}
