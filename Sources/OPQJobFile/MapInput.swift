import Foundation
import OPQCore

/// The input of `opq map`, read as GNU parallel reads it.
///
/// - Without input sources, items come from standard input, one per line (`-0`: per NUL byte). Every
///   line is an item, empty ones too (so `{#}` counts them); a last separator ends the last item rather
///   than starting an empty one, and empty input makes no item.
/// - `::: a b c` is an input source of arguments; `:::: FILE…` reads one source per file (`-` is
///   standard input). With several sources, each operation gets one value of each: their cartesian
///   product, the first source varying slowest (`::: a b ::: 1 2` → `a 1`, `a 2`, `b 1`, `b 2`).
/// - `-n N` gives each operation N rows (the last one may get fewer).
public enum MapInput {
    /// An input source as written after the command.
    public enum Source: Sendable, Equatable {
        /// `::: a b c`.
        case arguments([String])
        /// `:::: FILE` (`-` = standard input).
        case file(String)
    }

    /// Splits the words after `--` into the command template and the input sources after the first
    /// `:::` or `::::`. No source means "read standard input".
    public static func split(_ words: [String]) throws(MapTemplateError) -> (command: [String], sources: [Source]) {
        guard let first = words.firstIndex(where: { $0 == ":::" || $0 == "::::" || $0 == ":::+" || $0 == "::::+" }) else {
            return (words, [])
        }
        var sources: [Source] = []
        var mode = "", filesAfterMode = 0
        var arguments: [String] = []
        func finish() throws(MapTemplateError) {
            if mode == ":::" { sources.append(.arguments(arguments)) }
            if mode == "::::" && filesAfterMode == 0 { throw .invalidInput(":::: needs a file name after it (- for standard input)") }
        }
        for word in words[first...] {
            switch word {
            case ":::", "::::":
                try finish()
                (mode, filesAfterMode, arguments) = (word, 0, [])
            case ":::+", "::::+":
                throw .invalidInput("\(word) (linked input sources) is not supported; use ::: or :::: (all combinations)")
            default:
                if mode == ":::" {
                    arguments.append(word)
                } else {
                    sources.append(.file(word))
                    filesAfterMode += 1
                }
            }
        }
        try finish()
        return (Array(words[..<first]), sources)
    }

    /// Splits `data` into items at `separator` (see ``MapInput``). `source` names the input in errors
    /// (empty for standard input). An item must be UTF-8 and hold no NUL byte.
    public static func items(_ data: Data, separator: UInt8, source: String = "") throws(MapTemplateError) -> [String] {
        if data.isEmpty { return [] }
        var pieces = data.split(separator: separator, omittingEmptySubsequences: false)
        if data.last == separator { pieces.removeLast() }
        var items: [String] = []
        items.reserveCapacity(pieces.count)
        for (index, bytes) in pieces.enumerated() {
            guard let item = String(validating: bytes, as: UTF8.self) else {
                throw .invalidItem(source: source, item: index + 1,
                                   problem: "is not valid UTF-8; opq passes arguments as UTF-8 text (rename the file)")
            }
            if bytes.contains(0) {
                throw .invalidItem(source: source, item: index + 1,
                                   problem: "contains a NUL byte, which would silently cut the argument short; remove it (or split the input at NUL bytes with -0)")
            }
            items.append(item)
        }
        return items
    }

    /// The arguments of each operation: the cartesian product of `sources` (first varying slowest),
    /// `perOperation` rows at a time.
    /// - Throws: ``MapTemplateError/tooManyOperations(count:)`` beyond ``Limits/maxOperationsPerSubmission``,
    ///   before building anything.
    public static func operations(_ sources: [[String]], perOperation: Int = 1) throws(MapTemplateError) -> [[String]] {
        precondition(perOperation >= 1, "perOperation must be at least 1")
        guard !sources.isEmpty else { return [] }
        var rows = 1
        for source in sources {
            let (product, overflow) = rows.multipliedReportingOverflow(by: source.count)
            if overflow || product / perOperation > Limits.maxOperationsPerSubmission {
                let count = sources.map { "\($0.count)" }.joined(separator: " × ")
                throw .tooManyOperations(count: perOperation == 1 ? count : "(\(count)) / \(perOperation)")
            }
            rows = product
        }
        var result: [[String]] = []
        result.reserveCapacity((rows + perOperation - 1) / perOperation)
        var current: [String] = []
        var indexes = [Int](repeating: 0, count: sources.count)
        for _ in 0..<rows {
            for (s, i) in indexes.enumerated() { current.append(sources[s][i]) }
            if current.count == perOperation * sources.count {
                result.append(current)
                current = []
            }
            // Advance like an odometer: the last source fastest.
            var s = sources.count - 1
            while s >= 0 {
                indexes[s] += 1
                if indexes[s] < sources[s].count { break }
                indexes[s] = 0
                s -= 1
            }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }
}
