import Foundation

/// YAML accepts JSON and more (trailing commas, comments, unquoted keys); a `*.json` job file must be
/// strict JSON, so it is checked with Foundation's parser first and its error located by line.
enum StrictJSON {
    static func check(_ text: String, file: String) throws(JobFileError) {
        do {
            _ = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        } catch {
            let ns = error as NSError
            let detail = (ns.userInfo[NSDebugDescriptionErrorKey] as? String) ?? ns.localizedDescription
            throw JobFileError(file: file, line: line(in: detail) ?? line(atOffsetIn: detail, of: text),
                               message: "JSON syntax error: \(detail)")
        }
    }

    /// The line of the byte offset after "character " in Foundation's message, if it gives one.
    static func line(atOffsetIn message: String, of text: String) -> Int? {
        guard let range = message.range(of: "character "),
              let offset = Int(message[range.upperBound...].prefix { $0.isNumber }) else { return nil }
        return text.utf8.prefix(offset).reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
    }

    /// The number after "line " in Foundation's message, if it gives one.
    static func line(in message: String) -> Int? {
        guard let range = message.range(of: "line ") else { return nil }
        return Int(message[range.upperBound...].prefix { $0.isNumber })
    }
}
