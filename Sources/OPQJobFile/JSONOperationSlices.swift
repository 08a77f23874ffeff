import Yams

/// A big JSON job file read a slice of its `operations` at a time (issue 19).
///
/// Composing the whole document builds one Yams node per value before any is read — for 200,000
/// operations that tree alone is hundreds of megabytes. JSON has no anchors or aliases, so each item of
/// `operations` stands alone: the document is composed once with that list's items blanked out (the
/// top-level fields, with every line and column where it was), then the items in slices of
/// ``sliceSize``, each slice composed on its own and read with its lines shifted back to the file's.
/// Only strict JSON that ``StrictJSON`` accepted comes here, so the scan below needs no error handling
/// of its own: anything it does not expect sends the file down the whole-document path instead.
struct JSONOperationSlices {
    /// Items composed at once: big enough that Yams' per-document setup does not count, small enough
    /// that a slice's nodes stay a few megabytes.
    static let sliceSize = 2_000

    /// One item of the `operations` array: its bytes, and where it starts in the file.
    struct Item {
        var start: Int
        var end: Int
        /// 1-based line of the item's first byte.
        var line: Int
        /// Unicode scalars before it on its line (libyaml counts columns in scalars).
        var column: Int
    }

    /// The document with the items blanked (spaces; line breaks kept).
    let outline: String
    /// The items, in file order.
    let items: [Item]
    /// The file's bytes.
    private let bytes: [UInt8]

    /// Finds the top-level `"operations": [ … ]` of strict JSON `bytes`; nil if the document is not an
    /// object holding exactly one such array (the whole-document path then reports what is wrong).
    init?(_ bytes: [UInt8]) {
        var scan = Scan(bytes: bytes)
        scan.skipSpace()
        guard scan.peek == UInt8(ascii: "{") else { return nil }
        scan.advance()
        var found: (open: Int, close: Int, items: [Item])?
        while true {
            scan.skipSpace()
            guard scan.peek == UInt8(ascii: "\"") else { break }  // `}`: the end of the object
            let keyStart = scan.index + 1
            scan.skipString()
            let isOperations = bytes[keyStart..<(scan.index - 1)].elementsEqual("operations".utf8)
            scan.skipSpace()
            scan.advance()  // ':'
            scan.skipSpace()
            if isOperations {
                guard found == nil, scan.peek == UInt8(ascii: "[") else { return nil }
                let open = scan.index
                scan.advance()
                var items: [Item] = []
                scan.skipSpace()
                while scan.peek != UInt8(ascii: "]") {
                    let line = scan.line, column = scan.column
                    let start = scan.index
                    scan.skipValue()
                    items.append(Item(start: start, end: scan.index, line: line, column: column))
                    scan.skipSpace()
                    if scan.peek == UInt8(ascii: ",") {
                        scan.advance()
                        scan.skipSpace()
                    }
                }
                found = (open, scan.index, items)
                scan.advance()
            } else {
                scan.skipValue()
            }
            scan.skipSpace()
            if scan.peek == UInt8(ascii: ",") { scan.advance() }
        }
        guard let found else { return nil }
        // The outline keeps every line break of the list (so later lines keep their numbers) and pads the
        // list's last line, so what follows `]` keeps its column too.
        var outline = Array(bytes[..<(found.open + 1)])
        var column = 0
        for byte in bytes[(found.open + 1)..<found.close] {
            if byte == 0x0A {
                outline.append(0x0A)
                column = 0
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        outline += repeatElement(0x20, count: column)
        outline += bytes[found.close...]
        self.outline = String(decoding: outline, as: UTF8.self)
        self.items = found.items
        self.bytes = bytes
    }

    /// Items `range` as one JSON array whose first item sits at its own line and column in the file,
    /// and the lines of the file before the slice's first line.
    func slice(_ range: Range<Int>) -> (text: String, lineOffset: Int) {
        let first = items[range.lowerBound], last = items[range.upperBound - 1]
        var text = [UInt8]()
        text.reserveCapacity(last.end - first.start + first.column + 4)
        text += [UInt8(ascii: "["), 0x0A]
        text += repeatElement(0x20, count: first.column)
        text += bytes[first.start..<last.end]
        text += [0x0A, UInt8(ascii: "]")]
        return (String(decoding: text, as: UTF8.self), first.line - 2)
    }

    /// Items `range` built straight into nodes at their file lines (``JSONNodes``), or nil: then
    /// ``slice(_:)`` is composed with Yams.
    func nodes(_ range: Range<Int>) -> [Node]? { JSONNodes.items(items[range], in: bytes) }

    /// A cursor over strict JSON, counting lines and columns.
    private struct Scan {
        let bytes: [UInt8]
        var index = 0
        var line = 1
        var lineStart = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        /// Unicode scalars between the start of the line and `index`.
        var column: Int {
            var count = 0
            for k in lineStart..<index where bytes[k] & 0xC0 != 0x80 { count += 1 }
            return count
        }

        mutating func advance() { index += 1 }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x0A:
                    line += 1
                    lineStart = index + 1
                case 0x20, 0x09, 0x0D: break
                default: return
                }
                index += 1
            }
        }

        /// From the opening quote to just past the closing one (strings hold no raw line breaks).
        mutating func skipString() {
            index += 1
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\\") {
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    return
                }
            }
        }

        /// One whole value: a string, a literal, a number, or a bracketed container with all it holds.
        mutating func skipValue() {
            var depth = 0
            repeat {
                guard let byte = peek else { return }
                switch byte {
                case UInt8(ascii: "\""): skipString()
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    depth += 1
                    index += 1
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    depth -= 1
                    index += 1
                case 0x0A, 0x20, 0x09, 0x0D: skipSpace()
                case UInt8(ascii: ","), UInt8(ascii: ":"): index += 1
                default:
                    // A literal or a number: up to the next delimiter.
                    while let next = peek, !Self.delimiters.contains(next) { index += 1 }
                }
            } while depth > 0
        }

        private static let delimiters: Set<UInt8> = Set(",]} \t\r\n:".utf8)
    }
}
