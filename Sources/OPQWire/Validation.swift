import OPQCore
import SwiftProtobuf

/// A generated enum whose values can be checked against the ones this protocol version defines.
protocol KnownEnum: SwiftProtobuf.Enum {
    /// False for values received from a peer that this version does not define (`UNRECOGNIZED`).
    var isKnown: Bool { get }
}

extension Opq_V1_QualityOfService: KnownEnum {
    var isKnown: Bool { if case .UNRECOGNIZED = self { false } else { true } }
}
extension Opq_V1_Requirement: KnownEnum {
    var isKnown: Bool { if case .UNRECOGNIZED = self { false } else { true } }
}
extension Opq_V1_OperationState: KnownEnum {
    var isKnown: Bool { if case .UNRECOGNIZED = self { false } else { true } }
}
extension Opq_V1_Outcome: KnownEnum {
    var isKnown: Bool { if case .UNRECOGNIZED = self { false } else { true } }
}
extension Opq_V1_FinishReason: KnownEnum {
    var isKnown: Bool { if case .UNRECOGNIZED = self { false } else { true } }
}
extension Opq_V1_AttemptStatus: KnownEnum {
    var isKnown: Bool { if case .UNRECOGNIZED = self { false } else { true } }
}
extension Opq_V1_KillReason: KnownEnum {
    var isKnown: Bool { if case .UNRECOGNIZED = self { false } else { true } }
}
extension Opq_V1_ErrorCode: KnownEnum {
    var isKnown: Bool { if case .UNRECOGNIZED = self { false } else { true } }
}

/// The checks validation is made of. Paths are autoclosures: they are only built when a check fails,
/// so validating a valid message allocates nothing for them.
enum Check {
    typealias Path = () -> String

    /// Throws `invalidField(path, problem)` unless `condition` holds.
    static func that(_ condition: Bool, _ path: @autoclosure Path, _ problem: @autoclosure () -> String) throws(WireError) {
        if !condition { throw .invalidField(path(), problem: problem()) }
    }

    /// A required sub-message or oneof.
    static func present(_ present: Bool, _ path: @autoclosure Path) throws(WireError) {
        if !present { throw .missingField(path()) }
    }

    /// An operation or job id: ≥ 1.
    static func id(_ value: UInt64, _ path: @autoclosure Path) throws(WireError) {
        if value == 0 { throw .invalidField(path(), problem: "must be an id ≥ 1, not 0") }
    }

    /// An attempt number: 1…maxAttempt.
    static func attempt(_ value: UInt32, _ path: @autoclosure Path) throws(WireError) {
        if value == 0 || value > WireLimits.maxAttempt {
            throw .invalidField(path(), problem: "must be an attempt number from 1 to \(WireLimits.maxAttempt), not \(value)")
        }
    }

    /// An attempt reference.
    static func attempt(_ ref: Opq_V1_AttemptRef, _ path: @autoclosure Path) throws(WireError) {
        try id(ref.operation, path() + ".operation")
        try attempt(ref.attempt, path() + ".attempt")
    }

    /// A name: at most `maxNameBytes` bytes; non-empty unless `allowEmpty`.
    static func name(_ value: String, _ path: @autoclosure Path, allowEmpty: Bool = true) throws(WireError) {
        let bytes = value.utf8.count
        if bytes == 0, !allowEmpty { throw .invalidField(path(), problem: "must not be empty") }
        if bytes > WireLimits.maxNameBytes {
            throw .invalidField(path(), problem: "is \(bytes) bytes long; at most \(WireLimits.maxNameBytes) are allowed")
        }
    }

    /// The length of a repeated field: `minimum`…`maximum` entries.
    static func count(_ count: Int, _ path: @autoclosure Path, minimum: Int = 0, maximum: Int = WireLimits.maxListEntries) throws(WireError) {
        if count < minimum {
            throw .invalidField(path(), problem: minimum == 1 ? "must not be empty" : "must hold at least \(minimum) entries")
        }
        if count > maximum { throw .invalidField(path(), problem: "holds \(count) entries; at most \(maximum) are allowed") }
    }

    /// A string map (labels, environment): bounded entry count, bounded non-empty keys.
    static func map(_ map: [String: String], _ path: @autoclosure Path) throws(WireError) {
        try count(map.count, path())
        for key in map.keys { try name(key, "\(path())[\(key.prefix(64).debugDescription)]", allowEmpty: false) }
    }

    /// An enum value this version defines; the zero value only if `allowZero`.
    static func known<E: KnownEnum>(_ value: E, _ path: @autoclosure Path, allowZero: Bool = true) throws(WireError) {
        if !value.isKnown || (!allowZero && value.rawValue == 0) {
            throw .unknownEnumValue(field: path(), value: value.rawValue)
        }
    }

    /// A duration or timestamp in seconds: finite, ≥ 0 (> 0 if `positive`), at most `maxSeconds`.
    static func seconds(_ value: Double, _ path: @autoclosure Path, positive: Bool = false) throws(WireError) {
        if !Limits.isValidDuration(value, positive: positive) {
            throw .invalidField(path(), problem: "must be \(Limits.durationRange(positive: positive)), not \(value)")
        }
    }

    /// A raw-frame reference: 0 (none) or 1…`rawFrames`.
    static func frame(_ index: UInt32, rawFrames: Int, _ path: @autoclosure Path) throws(WireError) {
        if Int(index) > rawFrames {
            throw .invalidField(path(), problem: "refers to raw frame \(index), but the message has \(rawFrames)")
        }
    }

    /// A work description. For a dispatch (`strict`), work is required and every command must name a
    /// program; in a submission only sizes are checked here, and the core refuses empty argv or handler
    /// names with a `SubmissionError` that carries the operation's index and name (a file line for the CLI).
    static func work(_ work: Opq_V1_Work, _ path: @autoclosure Path, strict: Bool) throws(WireError) {
        switch work.kind {
        case nil:
            if strict { throw .missingField(path() + ".kind") }
        case .command(let command):
            try self.command(command, path() + ".command", strict: strict)
        case .commands(let list):
            try count(list.commands.count, path() + ".commands.commands", minimum: strict ? 1 : 0, maximum: 1024)
            for (k, command) in list.commands.enumerated() {
                try self.command(command, "\(path()).commands.commands[\(k)]", strict: strict)
            }
        case .handler(let handler):
            try name(handler.name, path() + ".handler.name", allowEmpty: !strict)
        case .handlers(let list):
            try count(list.calls.count, path() + ".handlers.calls", minimum: strict ? 1 : 0, maximum: Limits.maxHandlerCallsPerOperation)
            var bytes = 0
            for (k, call) in list.calls.enumerated() {
                try name(call.name, "\(path()).handlers.calls[\(k)].name", allowEmpty: !strict)
                bytes += call.payload.count
                if bytes > Limits.maxHandlerCallPayloadBytes {
                    throw .invalidField("\(path()).handlers.calls[\(k)].payload", problem: "brings the payloads to \(bytes) bytes; "
                        + "at most \(Limits.maxHandlerCallPayloadBytes) (16 MiB) are allowed in one operation's handler calls")
                }
            }
        }
    }

    /// One command: bounded lists; when `strict`, a non-empty argv whose first entry names a program.
    static func command(_ command: Opq_V1_Command, _ path: @autoclosure Path, strict: Bool) throws(WireError) {
        try count(command.argv.count, path() + ".argv", minimum: strict ? 1 : 0)
        if strict, command.argv[0].isEmpty { throw .invalidField(path() + ".argv[0]", problem: "must name a program") }
        try map(command.environment, path() + ".environment")
        if command.hasWorkingDirectory { try name(command.workingDirectory, path() + ".working_directory") }
        try count(command.inputs.count, path() + ".inputs")
        try count(command.outputs.count, path() + ".outputs")
    }
}
