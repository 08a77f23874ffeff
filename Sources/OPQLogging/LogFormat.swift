import Foundation
import Logging

/// How the daemons (`opq-coordinator`, `opq-worker`) write their logs to standard error.
public enum LogFormat: String, CaseIterable, Sendable {
    /// swift-log's text lines, for people.
    case text
    /// One JSON object per line, for log shippers: `time`, `level`, `label`, `message`, then every
    /// metadata key (`operation.id`, `worker.id`, …) as a field of its own.
    case json

    /// Bootstraps `LoggingSystem` once, for an executable (libraries only take a `Logger`).
    public func bootstrap(level: Logger.Level) {
        switch self {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}

/// A swift-log handler that writes one JSON object per line to standard error.
///
/// There is no causal id yet (STYLE.md §4): when messages carry one, it arrives as metadata and is
/// written like any other key.
public struct JSONLogHandler: LogHandler {
    /// Names the fields every line has; metadata keys that collide get a `metadata.` prefix.
    static let reserved: Set<String> = ["time", "level", "label", "message", "source"]
    private static let lock = NSLock()

    public let label: String
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]

    /// A handler for loggers named `label`.
    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?,
                    source: String, file: String, function: String, line: UInt) {
        let line = Self.line(time: Date(), level: level, label: label, message: message.description,
                             metadata: metadata.merging(explicit ?? [:]) { $1 })
        Self.lock.lock()
        FileHandle.standardError.write(Data(line.utf8))
        Self.lock.unlock()
    }

    /// One log line: a JSON object and a newline. Metadata keys are sorted, so lines are stable.
    static func line(time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        var out = "{\"time\":\(quote(iso8601(time))),\"level\":\(quote(level.rawValue)),\"label\":\(quote(label)),\"message\":\(quote(message))"
        for key in metadata.keys.sorted() {
            out += ",\(quote(reserved.contains(key) ? "metadata.\(key)" : key)):\(json(metadata[key]!))"
        }
        return out + "}\n"
    }

    private static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): quote(text)
        case .stringConvertible(let convertible): quote(convertible.description)
        case .array(let values): "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let values):
            "{" + values.keys.sorted().map { "\(quote($0)):\(json(values[$0]!))" }.joined(separator: ",") + "}"
        }
    }

    /// `text` as a JSON string literal.
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    private static func iso8601(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
