import SwiftProtobuf

/// One of the protocol's four top-level messages (`Opq_V1_WorkerMessage`, `Opq_V1_CoordinatorToWorker`,
/// `Opq_V1_ClientRequest`, `Opq_V1_CoordinatorToClient`): what `Frames` encodes and decodes.
public protocol WireEnvelope: SwiftProtobuf.Message {
    /// Checks that required fields are set, enum values are known, numbers are in range and sizes are
    /// bounded. `rawFrames` is how many raw frames came after the message (for frame references).
    func validate(rawFrames: Int) throws(WireError)

    /// The message's protobuf bytes: those of SwiftProtobuf's `serializedBytes()`, which the hot
    /// messages (`WorkerMessage`, `CoordinatorToWorker`) write by hand.
    func encodedBytes() throws -> [UInt8]

    /// The message decoded from `bytes` and validated (`rawFrames` raw frames came after it): the
    /// value or error of ``decodedBySwiftProtobuf(_:rawFrames:)``, which the hot messages reach by
    /// reading their bytes by hand, falling back to SwiftProtobuf for anything unusual.
    static func decoded(_ bytes: [UInt8], rawFrames: Int) throws(WireError) -> Self
}

extension WireEnvelope {
    public func encodedBytes() throws -> [UInt8] { try serializedBytes() }

    public static func decoded(_ bytes: [UInt8], rawFrames: Int) throws(WireError) -> Self {
        try decodedBySwiftProtobuf(bytes, rawFrames: rawFrames)
    }

    /// The message SwiftProtobuf decodes from `bytes`, validated: the reference every envelope's
    /// ``decoded(_:rawFrames:)`` gives the same value or error as (tests, the wire fuzzer and
    /// `opq-bench wire` compare them).
    public static func decodedBySwiftProtobuf(_ bytes: [UInt8], rawFrames: Int) throws(WireError) -> Self {
        let message: Self
        do {
            message = try Self(serializedBytes: bytes)
        } catch {
            throw .undecodable(type: protoMessageName, detail: "\(error)")
        }
        try message.validate(rawFrames: rawFrames)
        return message
    }
}

/// The framing of every opq ZeroMQ message (see `opq.proto`):
///
///     [identity]   only on the coordinator's ROUTER sockets
///     "OPQ/1"      signature frame
///     <message>    one protobuf-encoded `WireEnvelope`
///     [raw…]       optional raw frames (captured output), referenced by 1-based index
///
/// DEALER sides (workers, clients) use `encode(_:raw:)` and `decode(_:as:)`; the coordinator's ROUTER
/// sockets use `encode(_:raw:to:)` and `decodeRouted(_:as:)`, which add and strip the identity frame.
public enum Frames {
    /// The protocol signature: the first frame of every message.
    public static let signature: [UInt8] = Array("OPQ/1".utf8)

    /// Encodes `message` (and the raw frames it references) as the frames of one ZeroMQ message.
    ///
    /// - Throws: `WireError.frameTooLarge` or `.tooManyFrames` when the receiver would refuse the message
    ///   (its `ZMQ_MAXMSGSIZE` would disconnect us); the caller should split the message.
    public static func encode<M: WireEnvelope>(_ message: M, raw: [[UInt8]] = []) throws(WireError) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        frames.reserveCapacity(2 + raw.count)
        frames.append(signature)
        try append(message, raw: raw, to: &frames, reserved: 2)
        return frames
    }

    /// Encodes `message` for a ROUTER socket: the peer's `identity` frame in front of `encode(_:raw:)`'s frames.
    public static func encode<M: WireEnvelope>(_ message: M, raw: [[UInt8]] = [], to identity: [UInt8]) throws(WireError) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        frames.reserveCapacity(3 + raw.count)
        frames.append(identity)
        frames.append(signature)
        try append(message, raw: raw, to: &frames, reserved: 3)
        return frames
    }

    /// Decodes and validates the frames of one ZeroMQ message received on a DEALER socket.
    ///
    /// - Returns: the message and the raw frames after it (index 0 here = frame reference 1).
    /// - Throws: `WireError` for anything that is not a valid message of type `M`; never traps.
    public static func decode<M: WireEnvelope>(
        _ frames: [[UInt8]], as type: M.Type = M.self
    ) throws(WireError) -> (message: M, raw: [[UInt8]]) {
        try decode(frames, from: 0, as: type)
    }

    /// Decodes and validates the frames of one ZeroMQ message received on a ROUTER socket, whose first
    /// frame is the sending peer's identity.
    public static func decodeRouted<M: WireEnvelope>(
        _ frames: [[UInt8]], as type: M.Type = M.self
    ) throws(WireError) -> (identity: [UInt8], message: M, raw: [[UInt8]]) {
        guard let identity = frames.first else { throw .missingIdentity }
        let (message, raw) = try decode(frames, from: 1, as: type)
        return (identity, message, raw)
    }

    // MARK: - Implementation

    static func append<M: WireEnvelope>(
        _ message: M, raw: [[UInt8]], to frames: inout [[UInt8]], reserved: Int
    ) throws(WireError) {
        guard raw.count + reserved <= WireLimits.maxFrames else {
            throw .tooManyFrames(count: raw.count + reserved, limit: WireLimits.maxFrames)
        }
        let body: [UInt8]
        do {
            body = try message.encodedBytes()
        } catch {
            throw .invalidField(M.protoMessageName, problem: "cannot be encoded: \(error)")
        }
        guard body.count <= WireLimits.maxFrameBytes else {
            throw .frameTooLarge(frame: reserved - 1, bytes: body.count, limit: WireLimits.maxFrameBytes)
        }
        frames.append(body)
        for (k, frame) in raw.enumerated() where frame.count > WireLimits.maxFrameBytes {
            throw .frameTooLarge(frame: reserved + k, bytes: frame.count, limit: WireLimits.maxFrameBytes)
        }
        frames.append(contentsOf: raw)
    }

    static func decode<M: WireEnvelope>(
        _ frames: [[UInt8]], from start: Int, as type: M.Type
    ) throws(WireError) -> (message: M, raw: [[UInt8]]) {
        let (bytes, rawFrames) = try messageFrame(frames, from: start)
        let message = try M.decoded(bytes, rawFrames: rawFrames)
        return (message, Array(frames[(start + 2)...]))
    }

    /// The message frame of `frames` (the signature at `start`) and how many raw frames follow it, once
    /// the frame count, sizes and signature are checked.
    static func messageFrame(_ frames: [[UInt8]], from start: Int) throws(WireError) -> (bytes: [UInt8], rawFrames: Int) {
        guard frames.count > start else { throw .empty }
        guard frames.count <= WireLimits.maxFrames else {
            throw .tooManyFrames(count: frames.count, limit: WireLimits.maxFrames)
        }
        for (k, frame) in frames.enumerated() where frame.count > WireLimits.maxFrameBytes {
            throw .frameTooLarge(frame: k, bytes: frame.count, limit: WireLimits.maxFrameBytes)
        }
        guard frames[start] == signature else { throw .badSignature(found: Array(frames[start].prefix(64))) }
        guard frames.count > start + 1 else { throw .missingMessage }
        return (frames[start + 1], frames.count - start - 2)
    }
}
