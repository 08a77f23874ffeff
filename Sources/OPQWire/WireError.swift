/// Why a ZeroMQ message is not a valid opq protocol message (or cannot be sent as one).
///
/// Every decode failure is one of these — never a crash. Field paths name the offending field from the
/// envelope down, e.g. `WorkerMessage.reports.items[3].finished.attempt`, so a log line or a client's
/// error message points at the exact place.
public enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The message has no frames at all (or, on a ROUTER, nothing after the identity).
    case empty
    /// The first frame is not the protocol signature `OPQ/1`; `found` holds (a prefix of) what was there.
    case badSignature(found: [UInt8])
    /// The signature frame is not followed by a protobuf frame.
    case missingMessage
    /// More frames than `WireLimits.maxFrames`.
    case tooManyFrames(count: Int, limit: Int)
    /// A frame larger than `WireLimits.maxFrameBytes` (frame 0 = the signature frame).
    case frameTooLarge(frame: Int, bytes: Int, limit: Int)
    /// The protobuf frame does not decode as `type`.
    case undecodable(type: String, detail: String)
    /// A required field (a `oneof` or a message) is not set.
    case missingField(String)
    /// A field holds a value out of its range.
    case invalidField(String, problem: String)
    /// An enum field holds a value this protocol version does not define (or the zero value where one is required).
    case unknownEnumValue(field: String, value: Int)
    /// The peer speaks another protocol version.
    case unsupportedVersion(found: UInt32, supported: UInt32)
    /// On a ROUTER socket: the message lacks the identity frame ZeroMQ puts in front.
    case missingIdentity

    /// The field the error is about, when it concerns one field.
    public var field: String? {
        switch self {
        case .missingField(let field), .invalidField(let field, _), .unknownEnumValue(let field, _): field
        default: nil
        }
    }

    /// True when the peer does not speak this protocol at all (wrong signature or version), as opposed
    /// to speaking it badly.
    public var isProtocolMismatch: Bool {
        switch self {
        case .badSignature, .unsupportedVersion: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .empty:
            return "empty message: expected the frames [\"OPQ/1\"] [protobuf message] [raw frames…]"
        case .badSignature(let found):
            let text = String(decoding: found.prefix(16), as: UTF8.self)
            if text.hasPrefix("OPQ/"), let version = UInt32(text.dropFirst(4)) {  // an opq of another version
                return "opq protocol version \(version) is not supported (this side speaks \(WireLimits.protocolVersion)): " +
                    "first frame \(text.debugDescription), expected \"OPQ/\(WireLimits.protocolVersion)\"; use the same opq release on both sides"
            }
            return "not an opq message: first frame is \(found.count) bytes \(text.debugDescription), expected \"OPQ/1\""
        case .missingMessage:
            return "message has the signature frame but no protobuf frame after it"
        case let .tooManyFrames(count, limit):
            return "message has \(count) frames; at most \(limit) are allowed"
        case let .frameTooLarge(frame, bytes, limit):
            return "frame \(frame) is \(bytes) bytes; at most \(limit) are allowed"
        case let .undecodable(type, detail):
            return "message frame does not decode as \(type): \(detail)"
        case .missingField(let field):
            return "\(field): missing (required)"
        case let .invalidField(field, problem):
            return "\(field): \(problem)"
        case let .unknownEnumValue(field, value):
            return value == 0 ? "\(field): missing (required)" : "\(field): unknown value \(value)"
        case let .unsupportedVersion(found, supported):
            return "protocol version \(found) is not supported (this side speaks \(supported))"
        case .missingIdentity:
            return "ROUTER message without an identity frame"
        }
    }
}
