import Foundation

/// One call of an in-process handler inside a ``Work/handlers(_:)`` operation: an execution block of a
/// remote `BlockOperation`, named by the handler registered on workers and given its own payload.
public struct HandlerCall: Hashable, Sendable {
    /// The registered handler name; non-empty.
    public var name: String
    /// Its input bytes.
    public var payload: [UInt8]

    /// Creates a call of handler `name` with `payload`.
    public init(_ name: String, payload: [UInt8] = []) {
        self.name = name
        self.payload = payload
    }

    /// A call of handler `name` given a UTF-8 text payload.
    public init(_ name: String, text: String) { self.init(name, payload: Array(text.utf8)) }
}

extension HandlerCall {
    /// The result of a ``Work/handlers(_:)`` operation made of the calls' `results` (in call order): a
    /// JSON array with one entry per call — a JSON string when the call's result is UTF-8 text (`""`
    /// when it returned none), else an object `{"base64": "…"}`. So `opq show --result` prints it
    /// readably and a client decodes it as `[String]` when every call returns text
    /// (``results(in:)`` undoes it in every case).
    public static func combinedResult(_ results: [[UInt8]]) -> [UInt8] {
        let entries: [Entry] = results.map { bytes in
            if let text = String(validating: bytes, as: UTF8.self) { .text(text) } else { .binary(Data(bytes).base64EncodedString()) }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        // Encoding strings and one-key objects cannot fail.
        return (try? Array(encoder.encode(entries))) ?? []
    }

    /// The calls' results held by a ``combinedResult(_:)``, in call order; nil when `bytes` is not one.
    public static func results(in bytes: [UInt8]) -> [[UInt8]]? {
        guard let entries = try? JSONDecoder().decode([Entry].self, from: Data(bytes)) else { return nil }
        var results: [[UInt8]] = []
        for entry in entries {
            switch entry {
            case .text(let text): results.append(Array(text.utf8))
            case .binary(let base64):
                guard let data = Data(base64Encoded: base64) else { return nil }
                results.append(Array(data))
            }
        }
        return results
    }

    /// One entry of a combined result.
    private enum Entry: Codable {
        case text(String)
        case binary(String)

        private enum Keys: String, CodingKey { case base64 }

        init(from decoder: any Decoder) throws {
            if let text = try? decoder.singleValueContainer().decode(String.self) {
                self = .text(text)
            } else {
                self = .binary(try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .base64))
            }
        }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .text(let text):
                var container = encoder.singleValueContainer()
                try container.encode(text)
            case .binary(let base64):
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(base64, forKey: .base64)
            }
        }
    }
}
