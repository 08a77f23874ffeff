import Yams

/// The items of a big JSON job file's `operations` built straight into the nodes Yams would compose
/// (issue 19): same scalar text, tags, styles and start lines, without libyaml's tokenizer and event
/// objects (≈ a fifth of the CLI's time for 200,000 operations).
///
/// Only text that ``StrictJSON`` accepted (and ``NestingLimit`` bounded to 64 levels) comes here, so
/// the reader needs no error handling: anything it does not expect makes ``items(_:in:)`` return nil
/// and the caller composes with Yams instead. Lines are the file's own (no offset).
struct JSONNodes {
    /// Whether nodes can carry marks here: Yams keeps `Mark`'s initializer internal, so one is made
    /// from a struct of the same two fields, checked once to read back what was written.
    static let canMark: Bool = {
        guard MemoryLayout<Mark>.size == MemoryLayout<MarkFields>.size else { return false }
        let mark = makeMark(line: 12_345, column: 67)
        return mark.line == 12_345 && mark.column == 67
    }()

    private struct MarkFields {
        var line: Int
        var column: Int
    }

    private static func makeMark(line: Int, column: Int) -> Mark {
        unsafeBitCast(MarkFields(line: line, column: column), to: Mark.self)
    }

    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    /// Column (in Unicode scalars, 0-based) of `columnIndex` on the current line.
    private var columnIndex = 0
    private var column = 0
    /// Tags that resolve to themselves are shared; implicit ones are resolved per node, so never shared.
    private let stringTag = Tag(.str)
    private let mappingTag = Tag(.map)
    private let sequenceTag = Tag(.seq)
    /// Keys repeat in every operation: one string per distinct key. The first few are looked up by
    /// comparing bytes (a file's operations use a handful of keys: cheaper than hashing each), the
    /// rest in `keys`.
    private var recentKeys: [(range: Range<Int>, text: String)] = []
    private var keys: [ArraySlice<UInt8>: String] = [:]
    private static let recentKeyLimit = 16

    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// The nodes of `items` of `bytes` (each a whole JSON value at its file line and column), or nil
    /// if marks cannot be made or the text is not what ``StrictJSON`` passes.
    static func items(_ items: ArraySlice<JSONOperationSlices.Item>, in bytes: [UInt8]) -> [Node]? {
        guard canMark else { return nil }
        var reader = JSONNodes(bytes: bytes)
        var nodes: [Node] = []
        nodes.reserveCapacity(items.count)
        for item in items {
            reader.index = item.start
            reader.line = item.line
            reader.columnIndex = item.start
            reader.column = item.column - 1
            guard let node = reader.value(), reader.index == item.end else { return nil }
            nodes.append(node)
        }
        return nodes
    }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// The mark of `index`: its line and 1-based column (scalars counted since the last mark on the line).
    private mutating func mark() -> Mark {
        while columnIndex < index {
            if bytes[columnIndex] & 0xC0 != 0x80 { column += 1 }
            columnIndex += 1
        }
        return Self.makeMark(line: line, column: column + 1)
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x0A:
                line += 1
                index += 1
                columnIndex = index
                column = 0
            case 0x20, 0x09, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func value() -> Node? {
        skipSpace()
        guard let byte = peek else { return nil }
        let mark = mark()
        switch byte {
        case UInt8(ascii: "{"):
            index += 1
            var pairs: [(Node, Node)] = []
            pairs.reserveCapacity(8)  // a temporary: Yams copies the pairs into its own array
            skipSpace()
            if peek == UInt8(ascii: "}") {
                index += 1
                return .mapping(.init(pairs, mappingTag, .flow, mark))
            }
            while true {
                skipSpace()
                guard peek == UInt8(ascii: "\""), let key = string(interned: true) else { return nil }
                skipSpace()
                guard peek == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let value = value() else { return nil }
                pairs.append((key, value))
                skipSpace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return .mapping(.init(pairs, mappingTag, .flow, mark))
                default: return nil
                }
            }
        case UInt8(ascii: "["):
            index += 1
            var nodes: [Node] = []
            skipSpace()
            if peek == UInt8(ascii: "]") {
                index += 1
                return .sequence(.init(nodes, sequenceTag, .flow, mark))
            }
            while true {
                guard let node = value() else { return nil }
                nodes.append(node)
                skipSpace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return .sequence(.init(nodes, sequenceTag, .flow, mark))
                default: return nil
                }
            }
        case UInt8(ascii: "\""):
            return string(interned: false)
        default:
            // A number, true, false or null: plain text, typed by Yams' resolver when read.
            let start = index
            while let next = peek, !Self.isDelimiter(next) { index += 1 }
            guard index > start else { return nil }
            return .scalar(.init(String(decoding: bytes[start..<index], as: UTF8.self), Tag(.implicit), .plain, mark))
        }
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: ":"), 0x20, 0x09, 0x0D, 0x0A: true
        default: false
        }
    }

    /// A double-quoted string from its opening quote, decoded as libyaml decodes JSON's escapes.
    private mutating func string(interned: Bool) -> Node? {
        let mark = mark()
        index += 1
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") { index += 1 }
        guard index < bytes.count else { return nil }
        let text: String
        if bytes[index] == UInt8(ascii: "\"") {
            let raw = bytes[start..<index]
            if interned {
                text = internedKey(start..<index)
            } else {
                text = String(decoding: raw, as: UTF8.self)
            }
            index += 1
        } else {
            var decoded = Array(bytes[start..<index])
            guard unescape(into: &decoded) else { return nil }
            text = String(decoding: decoded, as: UTF8.self)
        }
        return .scalar(.init(text, stringTag, .doubleQuoted, mark))
    }

    /// The one string of the key in `range` of the bytes (see ``recentKeys``).
    private mutating func internedKey(_ range: Range<Int>) -> String {
        let recent: String? = bytes.withUnsafeBufferPointer { buffer in
            for k in recentKeys.indices where recentKeys[k].range.count == range.count {
                let start = recentKeys[k].range.lowerBound
                var i = 0
                while i < range.count, buffer[start + i] == buffer[range.lowerBound + i] { i += 1 }
                if i == range.count { return recentKeys[k].text }
            }
            return nil
        }
        if let recent { return recent }
        let raw = bytes[range]
        if let known = keys[raw] { return known }
        let text = String(decoding: raw, as: UTF8.self)
        if recentKeys.count < Self.recentKeyLimit { recentKeys.append((range, text)) } else { keys[raw] = text }
        return text
    }

    /// Decodes from `index` (inside a string) to just past its closing quote, appending UTF-8 to `out`.
    private mutating func unescape(into out: inout [UInt8]) -> Bool {
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return true
            case UInt8(ascii: "\\"):
                guard let escape = peek else { return false }
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    // libyaml refuses surrogate escapes (even a valid pair): Yams reports them.
                    guard let code = hex4(), let scalar = Unicode.Scalar(code) else { return false }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                default: return false
                }
            default: out.append(byte)
            }
        }
        return false
    }

    private mutating func hex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var code: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Character(Unicode.Scalar(bytes[index])).hexDigitValue else { return nil }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }
}
