/// The binary form of journal entries: what ``JournalEntry/encode(into:)`` writes and
/// ``JournalEntry/decode(from:)`` reads.

/// Why stored bytes could not be decoded.
public struct DecodeProblem: Error, CustomStringConvertible {
    let text: String
    init(_ text: String) { self.text = text }
    public var description: String { text }
}

/// Builds the binary form of entries (see ``JournalEntry/encode(into:)``).
struct EntryWriter {
    private(set) var buffer: [UInt8] = []
    /// Entries written.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func kind(_ kind: EntryKind) {
        count += 1
        buffer.append(kind.rawValue)
    }

    mutating func byte(_ value: UInt8) { buffer.append(value) }
    mutating func flag(_ value: Bool) { buffer.append(value ? 1 : 0) }

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            buffer.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        buffer.append(UInt8(value))
    }

    mutating func signed(_ value: Int64) { varint(UInt64(bitPattern: (value << 1) ^ (value >> 63))) }

    mutating func bytes(_ value: [UInt8]) {
        varint(UInt64(value.count))
        buffer.append(contentsOf: value)
    }

    mutating func text(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            buffer.append(contentsOf: utf8)
        }
    }

    mutating func double(_ value: Double) {
        withUnsafeBytes(of: value.bitPattern.littleEndian) { buffer.append(contentsOf: $0) }
    }

    /// Forgets what was written, keeping the storage.
    mutating func reset() {
        // A big submission's buffer is not kept: steady commits are small.
        buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
        count = 0
    }
}

/// Reads the binary form of entries.
struct EntryReader {
    private let buffer: [UInt8]
    private var offset = 0

    init(_ buffer: [UInt8]) { self.buffer = buffer }

    var isAtEnd: Bool { offset >= buffer.count }
    var remaining: Int { buffer.count - offset }

    mutating func byte() throws(DecodeProblem) -> UInt8 {
        guard offset < buffer.count else { throw DecodeProblem("a record cut short") }
        defer { offset += 1 }
        return buffer[offset]
    }

    mutating func flag() throws(DecodeProblem) -> Bool { try byte() != 0 }

    mutating func varint() throws(DecodeProblem) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try byte()
            guard shift < 64 else { throw DecodeProblem("a number too long") }
            result |= UInt64(next & 0x7F) << shift
            if next < 0x80 { return result }
            shift += 7
        }
    }

    mutating func signed() throws(DecodeProblem) -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    mutating func bytes() throws(DecodeProblem) -> [UInt8] {
        let count = try varint()
        guard count <= UInt64(remaining) else { throw DecodeProblem("a length beyond the record") }
        defer { offset += Int(count) }
        return Array(buffer[offset..<offset + Int(count)])
    }

    mutating func text() throws(DecodeProblem) -> String { String(decoding: try bytes(), as: UTF8.self) }

    mutating func double() throws(DecodeProblem) -> Double {
        guard remaining >= 8 else { throw DecodeProblem("a record cut short") }
        var bits: UInt64 = 0
        for k in 0..<8 { bits |= UInt64(buffer[offset + k]) << (8 * UInt64(k)) }
        offset += 8
        return Double(bitPattern: bits)
    }
}
