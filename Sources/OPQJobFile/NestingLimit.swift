/// How deep a job file may nest, checked on the text before Yams sees it.
///
/// Yams' composer builds the node tree recursively (one Swift stack frame set per level, and again when
/// the tree is freed), so `[[[[…` 100,000 deep or a few thousand nested mappings overflow the stack and
/// kill `opq` with SIGSEGV. No limit inside Yams can be set, so ``check(_:file:)`` scans the text first:
/// one pass, no recursion, O(n). A job file needs 6 levels (document → operations → operation →
/// commands → argv); the limit leaves ample room and stays far below what overflows a 512 KiB thread
/// stack.
///
/// The scan is conservative, not a YAML parser: it counts flow brackets (`[`, `{`) outside quoted text,
/// comments and block scalars, plus block levels (each deeper indentation, and each compact `- `, `? `
/// or `: ` indicator that opens a line). YAML can nest at most two levels per indentation step (a
/// mapping and a sequence at the same column), so what Yams would build is at most twice what is counted.
enum NestingLimit {
    /// Deepest nesting accepted, in counted levels.
    static let maxDepth = 64

    /// Throws a located error at the first line that nests deeper than ``maxDepth``.
    static func check(_ text: String, file: String) throws(JobFileError) {
        var text = text
        // Each line read in place: no list of lines, no copy of each (a tenth of a big file's reading before).
        let deepLine: Int? = text.withUTF8 { utf8 in
            var scan = Scan()
            var start = 0
            while start <= utf8.count {
                let end = utf8[start...].firstIndex(of: UInt8(ascii: "\n")) ?? utf8.count
                scan.line += 1
                if scan.feed(UnsafeBufferPointer(rebasing: utf8[start..<end])) > maxDepth { return scan.line }
                start = end + 1
            }
            return nil
        }
        if let deepLine {
            throw JobFileError(file: file, line: deepLine,
                               message: "nested deeper than \(maxDepth) levels; a job file needs far fewer (is a bracket or indentation runaway?)")
        }
    }

    /// The state carried from line to line.
    private struct Scan {
        var line = 0
        /// Columns of the open block levels (an indentation stack).
        var indents: [Int] = []
        /// Open flow collections.
        var flow = 0
        /// Inside a quoted scalar that continues on the next line: its quote character.
        var quote: UInt8?
        /// Inside a block scalar (`|`, `>`): the indentation of the node that holds it; its lines are
        /// those indented more (the first such line fixes how much more).
        var blockScalarParent: Int?
        /// The indentation of the block scalar's first content line, once seen.
        var blockScalarIndent: Int?
        /// The last line ended inside a plain scalar held by a block at this indentation: a line indented
        /// more continues that scalar, so its brackets and quotes are text.
        var plainParent: Int?

        private static let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t"), hash = UInt8(ascii: "#")

        /// Separation whitespace; `\r` too, so CRLF lines end like LF lines.
        private static func isBlank(_ byte: UInt8) -> Bool { byte == space || byte == tab || byte == UInt8(ascii: "\r") }

        /// Reads one line (without its newline) and returns the deepest level counted on it.
        ///
        /// Text is skipped (not counted) only where YAML itself reads it as text — inside a quoted
        /// scalar, a comment, a block scalar's lines, or a plain scalar's more-indented continuation
        /// lines — and every block line's indentation is counted even then.
        mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
            var i = 0
            while i < bytes.count, bytes[i] == Self.space { i += 1 }
            let indent = i
            let empty = i == bytes.count || (i + 1 == bytes.count && bytes[i] == UInt8(ascii: "\r"))
            if let parent = blockScalarParent {
                if empty { return indents.count + flow }
                if let content = blockScalarIndent {
                    if indent >= content { return indents.count + flow }
                } else if indent > parent {
                    blockScalarIndent = indent
                    return indents.count + flow
                }
                blockScalarParent = nil
                blockScalarIndent = nil
            }
            if quote == nil && (empty || bytes[i] == Self.hash) {
                if !empty { plainParent = nil }
                return indents.count + flow
            }
            // Every block line's indentation counts, even inside a quoted scalar.
            if flow == 0 {
                while let top = indents.last, top > indent { indents.removeLast() }
                if indents.last != indent { indents.append(indent) }
            }
            /// The indentation of the block around this line's first node (for a block scalar there).
            var enclosing = indents.count >= 2 ? indents[indents.count - 2] : -1
            var atValueStart = true
            var continued: Int?
            if let parent = plainParent, indent > parent, quote == nil, flow == 0 {
                atValueStart = false  // a continuation of the plain scalar on the line before
                continued = parent
            } else if quote == nil && flow == 0 {
                // A document marker (`--- [`): the value starts after it.
                if indent == 0, bytes.count >= 3, bytes[0] == bytes[1], bytes[1] == bytes[2],
                   bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "."), bytes.count == 3 || Self.isBlank(bytes[3]) {
                    i = 3
                    while i < bytes.count, Self.isBlank(bytes[i]) { i += 1 }
                    enclosing = -1
                }
                // Compact indicators opening the line each open a level: `- - x`, `? - x`, `: - x`.
                while i < bytes.count, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "?") || bytes[i] == UInt8(ascii: ":"),
                      i + 1 == bytes.count || Self.isBlank(bytes[i + 1]) {
                    enclosing = i
                    indents.append(i + 1)
                    i += 1
                    while i < bytes.count, Self.isBlank(bytes[i]) { i += 1 }
                }
            }
            plainParent = nil
            let lineStart = i
            var deepest = indents.count + flow
            var inPlain = false
            var previous: UInt8 = Self.space
            while i < bytes.count {
                let byte = bytes[i]
                if let open = quote {
                    if byte == open {
                        if open == UInt8(ascii: "'"), i + 1 < bytes.count, bytes[i + 1] == open {
                            i += 2
                            continue
                        }
                        quote = nil
                        atValueStart = false
                        inPlain = false
                    } else if byte == UInt8(ascii: "\\"), open == UInt8(ascii: "\"") {
                        i += 1
                    }
                    previous = byte
                    i += 1
                    continue
                }
                if Self.isBlank(byte) {
                    previous = byte
                    i += 1
                    continue
                }
                if byte == Self.hash, Self.isBlank(previous) {
                    inPlain = false
                    break
                }
                let isOpening = byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{")
                let isClosing = byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}")
                let isQuote = byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'")
                let isValueIndicator = byte == UInt8(ascii: ":") && (i + 1 == bytes.count || Self.isBlank(bytes[i + 1]) || flow > 0)
                if isOpening && (atValueStart || flow > 0) {
                    flow += 1
                    deepest = max(deepest, indents.count + flow)
                    atValueStart = true
                    inPlain = false
                } else if isClosing && flow > 0 {
                    flow -= 1
                    atValueStart = false
                    inPlain = false
                } else if byte == UInt8(ascii: ",") && flow > 0 {
                    atValueStart = true
                    inPlain = false
                } else if isQuote && atValueStart {
                    quote = byte
                } else if isValueIndicator {
                    atValueStart = true
                    inPlain = false
                    // `key: |`: the block scalar belongs to the mapping whose keys start at this line's node.
                    if flow == 0 { enclosing = lineStart }
                } else if (byte == UInt8(ascii: "|") || byte == UInt8(ascii: ">")) && atValueStart && flow == 0 {
                    blockScalarParent = enclosing
                    return deepest
                } else if (byte == UInt8(ascii: "&") || byte == UInt8(ascii: "!")) && atValueStart {
                    // An anchor or tag before the value: skip it; the value still starts after it.
                    while i + 1 < bytes.count, !Self.isBlank(bytes[i + 1]) { i += 1 }
                } else {
                    atValueStart = false
                    inPlain = true
                }
                previous = byte
                i += 1
            }
            if inPlain, quote == nil, flow == 0 { plainParent = continued ?? enclosing }
            return deepest
        }
    }
}
