/// Operation index → field (`name`, `timeout`, `after:NAME`, `commands[1]`) → line of its value, for
/// errors that point into the file.
///
/// Stored flat — one array of entries and one row range per operation — rather than as a dictionary per
/// operation: 200,000 operations would otherwise hold 200,000 small hash tables (≈ 40 MB) only to be
/// read when something is wrong (issue 19). A row set again (a `foreach` template's copies) appends a
/// new range; the old entries stay unused.
struct FieldLines: Sendable {
    private var fields: [String] = []
    private var lines: [Int32] = []
    /// Per operation index: `start << 32 | count` into `fields`/`lines`; 0 = no row.
    private var rows: [UInt64] = []
    /// The row ``append(_:_:)`` adds to.
    private var current = 0

    /// Makes room for `count` operations of a few fields each.
    mutating func reserveCapacity(operations count: Int) {
        fields.reserveCapacity(3 * count)
        lines.reserveCapacity(3 * count)
        rows.reserveCapacity(count)
    }

    /// Appends the row of operation `index`, replacing any earlier one.
    mutating func setRow(_ index: Int, _ entries: some Sequence<(key: String, value: Int)>) {
        startRow(index)
        for (field, line) in entries { append(field, line) }
    }

    /// Starts an empty row for operation `index`, replacing any earlier one; ``append(_:_:)`` fills it.
    mutating func startRow(_ index: Int) {
        if rows.count <= index { rows += repeatElement(0, count: index + 1 - rows.count) }
        rows[index] = UInt64(fields.count) << 32
        current = index
    }

    /// Adds `field`'s line to the row last started (nothing when there is no line); for a field added
    /// twice the later line wins, like an assignment to a dictionary.
    mutating func append(_ field: String, _ line: Int?) {
        guard let line else { return }
        fields.append(field)
        lines.append(Int32(clamping: line))
        rows[current] += 1
    }

    /// The line of `field` of operation `index`, if recorded.
    func line(_ index: Int, _ field: String) -> Int? {
        guard index >= 0, index < rows.count else { return nil }
        let start = Int(rows[index] >> 32), count = Int(rows[index] & 0xFFFF_FFFF)
        // Later entries win, like assignments to a dictionary.
        for k in (start..<(start + count)).reversed() where fields[k] == field { return Int(lines[k]) }
        return nil
    }

    /// Operation `index`'s whole row, nil when none was recorded.
    subscript(index: Int) -> [String: Int]? {
        get {
            guard index >= 0, index < rows.count, rows[index] != 0 else { return nil }
            let start = Int(rows[index] >> 32), count = Int(rows[index] & 0xFFFF_FFFF)
            var row: [String: Int] = [:]
            for k in start..<(start + count) { row[fields[k]] = Int(lines[k]) }
            return row
        }
        set {
            if let newValue {
                setRow(index, newValue.lazy.map { (key: $0.key, value: $0.value) })
            } else if index < rows.count {
                rows[index] = 0
            }
        }
    }

    /// Operation `index`'s row, empty when none was recorded (for adding to it).
    subscript(index: Int, default empty: [String: Int]) -> [String: Int] {
        get { self[index] ?? empty }
        set { self[index] = newValue }
    }
}
