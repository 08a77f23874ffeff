extension String {
    /// Whether the string's UTF-8 holds `byte` (a NUL, a `{`): a plain loop over its bytes in place. The
    /// generic `utf8.contains` walks the view index by index, ≈ 200 instructions for a short word, and a
    /// big job file asks this a few times per operation (issue 19).
    func containsUTF8(_ byte: UInt8) -> Bool {
        utf8.withContiguousStorageIfAvailable { $0.contains(byte) } ?? utf8.contains(byte)
    }
}
