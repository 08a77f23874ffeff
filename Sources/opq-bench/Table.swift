import Foundation

/// A plain-text table with aligned columns: text columns left-aligned, figures right-aligned.
struct TextTable {
    /// A column: its header and whether its cells are right-aligned.
    struct Column {
        let header: String
        let alignsRight: Bool

        init(_ header: String, right: Bool = true) {
            self.header = header
            alignsRight = right
        }
    }

    let columns: [Column]
    private(set) var rows: [[String]] = []

    init(_ columns: [Column]) { self.columns = columns }

    /// Appends a row; missing trailing cells are blank.
    mutating func append(_ cells: [String]) {
        precondition(cells.count <= columns.count, "row has more cells than the table has columns")
        rows.append(cells + Array(repeating: "", count: columns.count - cells.count))
    }

    /// The table as lines: header, a rule, the rows.
    func render(indent: String = "  ") -> String {
        var widths = columns.map { $0.header.count }
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            let padded = cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return columns[column].alignsRight ? padding + cell : cell + padding
            }
            return indent + padded.joined(separator: "  ").trimmingTrailingSpaces()
        }
        var lines = [line(columns.map(\.header))]
        lines.append(indent + widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        lines += rows.map(line)
        return lines.joined(separator: "\n")
    }
}

/// Number formats used in the tables.
/// Rounds of side-by-side measurements.
enum Rounds {
    /// The order of `subjects` in round `round` (from 1): every other round reversed, so none always runs
    /// first, or right after the same other, while the machine warms up, cools down or gets busier.
    static func order<T>(_ subjects: [T], round: Int) -> [T] {
        round.isMultiple(of: 2) ? subjects.reversed() : subjects
    }
}

enum Format {
    /// `1234567` → `1,234,567`.
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var result = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return value < 0 ? "-" + result : result
    }

    /// A rate, grouped and rounded to a whole number.
    static func rate(_ value: Double) -> String { grouped(Int(value.rounded())) }

    /// A size as written in the table: `10k`, `1M`, or the plain number when it is not round.
    static func size(_ value: Int) -> String {
        if value >= 1_000_000 && value % 1_000_000 == 0 { return "\(value / 1_000_000)M" }
        if value >= 1_000 && value % 1_000 == 0 { return "\(value / 1_000)k" }
        return grouped(value)
    }

    /// A value with `decimals` decimals.
    static func fixed(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }

    /// Seconds, with precision that suits their magnitude.
    static func seconds(_ value: Double) -> String {
        value < 0.01 ? fixed(value * 1000, 2) + " ms" : value < 10 ? fixed(value, 3) + " s" : fixed(value, 1) + " s"
    }

    /// Seconds as milliseconds with one decimal (`16.2 ms`).
    static func milliseconds(_ value: Double) -> String { fixed(value * 1000, 1) + " ms" }

    /// Bytes in binary units.
    static func bytes(_ value: UInt64) -> String {
        let gib = Double(value) / Double(1 << 30)
        return gib >= 1 ? fixed(gib, 1) + " GiB" : fixed(Double(value) / Double(1 << 20), 0) + " MiB"
    }

    /// `PASS` or `MISS`.
    static func verdict(_ passed: Bool) -> String { passed ? "PASS" : "MISS" }
}

private extension String {
    func trimmingTrailingSpaces() -> String {
        var result = self
        while result.last == " " { result.removeLast() }
        return result
    }
}
