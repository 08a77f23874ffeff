/// YAML accepts JSON and more (trailing commas, comments, unquoted keys, tags); a `*.json` job file must
/// be strict JSON (RFC 8259), so it is checked here first, with the line of the first mistake.
///
/// The checker is its own small scanner rather than Foundation's parser, which on Linux accepts a
/// trailing comma and recurses once per nesting level. This one keeps an explicit stack, never recurses,
/// and refuses nesting deeper than ``NestingLimit/maxDepth`` — so no input can crash or hang it.
/// - Complexity: O(n) in the length of the text.
enum StrictJSON {
    static func check(_ text: String, file: String) throws(JobFileError) {
        var scanner = Scanner(bytes: Array(text.utf8))
        if let (line, problem) = scanner.run() {
            throw JobFileError(file: file, line: line, message: "JSON syntax error: \(problem)")
        }
    }

    /// One pass over the bytes; `run()` returns the line and problem of the first mistake, or nil.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        var line = 1

        /// What the scanner expects inside the innermost open container.
        private enum Container { case object, array }

        init(bytes: [UInt8]) { self.bytes = bytes }

        private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        private func describe(_ byte: UInt8?) -> String {
            guard let byte else { return "the end of the file" }
            if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
            return "byte 0x" + String(byte, radix: 16, uppercase: true)
        }

        private mutating func skipSpace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                if byte == 0x0A { line += 1 }
                index += 1
            }
        }

        mutating func run() -> (Int, String)? {
            var stack: [Container] = []
            skipSpace()
            if index < bytes.count, bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
                return (1, "the file starts with a byte-order mark; save it as UTF-8 without one")
            }
            // Expect a value, then close containers / take separators until the next value is due.
            while true {
                skipSpace()
                guard let byte = current else { return (line, "expected a value, found the end of the file") }
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    if stack.count >= NestingLimit.maxDepth {
                        return (line, "nested deeper than \(NestingLimit.maxDepth) levels")
                    }
                    let isObject = byte == UInt8(ascii: "{")
                    stack.append(isObject ? .object : .array)
                    index += 1
                    skipSpace()
                    if current == UInt8(ascii: isObject ? "}" : "]") {
                        index += 1
                        stack.removeLast()
                    } else if isObject {
                        if let problem = key() { return (line, problem) }
                        continue
                    } else {
                        continue
                    }
                case UInt8(ascii: "\""):
                    if let problem = string() { return (line, problem) }
                case UInt8(ascii: "t"): if let problem = literal("true") { return (line, problem) }
                case UInt8(ascii: "f"): if let problem = literal("false") { return (line, problem) }
                case UInt8(ascii: "n"): if let problem = literal("null") { return (line, problem) }
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    if let problem = number() { return (line, problem) }
                default:
                    return (line, "expected a value, found \(describe(byte))")
                }
                // After a value: a separator, a closing bracket, or the end.
                while true {
                    skipSpace()
                    guard let container = stack.last else {
                        if let byte = current { return (line, "unexpected \(describe(byte)) after the end of the document") }
                        return nil
                    }
                    let closing = UInt8(ascii: container == .object ? "}" : "]")
                    guard let byte = current else {
                        return (line, "expected ',' or '\(Character(Unicode.Scalar(closing)))', found the end of the file")
                    }
                    if byte == closing {
                        index += 1
                        stack.removeLast()
                        continue
                    }
                    guard byte == UInt8(ascii: ",") else {
                        return (line, "expected ',' or '\(Character(Unicode.Scalar(closing)))', found \(describe(byte))")
                    }
                    index += 1
                    skipSpace()
                    if current == UInt8(ascii: "]") || current == UInt8(ascii: "}") {
                        return (line, "trailing comma before \(describe(current)); JSON allows none")
                    }
                    if container == .object, let problem = key() { return (line, problem) }
                    break
                }
            }
        }

        /// `"key"` `:` inside an object.
        private mutating func key() -> String? {
            guard current == UInt8(ascii: "\"") else { return "expected a quoted key, found \(describe(current))" }
            if let problem = string() { return problem }
            skipSpace()
            guard current == UInt8(ascii: ":") else { return "expected ':' after the key, found \(describe(current))" }
            index += 1
            return nil
        }

        private mutating func string() -> String? {
            index += 1
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return nil
                case UInt8(ascii: "\\"):
                    guard let escape = current else { return "unterminated string" }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                         UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        break
                    case UInt8(ascii: "u"):
                        for _ in 0..<4 {
                            guard let hex = current, (hex >= 0x30 && hex <= 0x39) || ((hex | 0x20) >= 0x61 && (hex | 0x20) <= 0x66) else {
                                return "\\u must be followed by four hexadecimal digits"
                            }
                            index += 1
                        }
                    default:
                        return "invalid escape '\\\(Character(Unicode.Scalar(escape)))' in a string"
                    }
                case 0x0A:
                    return "a string may not span lines (write \\n)"
                case 0x00..<0x20:
                    return "control character \(describe(byte)) in a string (escape it)"
                default:
                    break
                }
            }
            return "unterminated string"
        }

        private mutating func literal(_ word: String) -> String? {
            for expected in word.utf8 {
                guard current == expected else { return "expected a value, found \(describe(current))" }
                index += 1
            }
            return nil
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        private mutating func number() -> String? {
            func isDigit(_ byte: UInt8?) -> Bool { byte.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }
            if current == UInt8(ascii: "-") { index += 1 }
            if current == UInt8(ascii: "0") {
                index += 1
                if isDigit(current) { return "a number may not start with 0" }
            } else if isDigit(current) {
                while isDigit(current) { index += 1 }
            } else {
                return "expected a digit, found \(describe(current))"
            }
            if current == UInt8(ascii: ".") {
                index += 1
                guard isDigit(current) else { return "expected a digit after '.', found \(describe(current))" }
                while isDigit(current) { index += 1 }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard isDigit(current) else { return "expected a digit in the exponent, found \(describe(current))" }
                while isDigit(current) { index += 1 }
            }
            return nil
        }
    }
}
