import Foundation
import SwiftProtobuf

/// Protobuf's binary wire format read by hand, for the few messages received per command
/// (`WorkerMessage+Codec.swift`, `CoordinatorToWorker+Codec.swift`).
///
/// It reads what SwiftProtobuf reads the same way (varints of up to 10 bytes, fields in any order, the
/// last value of a scalar wins, repeated fields may be split) and throws ``Unhandled`` for anything it
/// leaves to SwiftProtobuf: malformed or truncated bytes, a field number the caller does not know, a
/// known field with another wire type (SwiftProtobuf keeps it as an unknown field), invalid UTF-8. The
/// caller then decodes the whole message with SwiftProtobuf, which gives the value or the error the
/// hand-read path would have had to reproduce.
struct ProtobufReader {
    /// The bytes are not something the hand-written path decodes (see ``ProtobufReader``).
    struct Unhandled: Error {}

    /// Protobuf's wire types (the low 3 bits of a field's key).
    enum WireType: UInt8 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, startGroup = 3, endGroup = 4, fixed32 = 5
    }

    private let buffer: UnsafeBufferPointer<UInt8>
    private var index: Int
    private let end: Int

    /// A reader of a whole message.
    init(_ buffer: UnsafeBufferPointer<UInt8>) {
        self.init(buffer, from: 0, to: buffer.count)
    }

    private init(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) {
        self.buffer = buffer
        index = start
        self.end = end
    }

    /// The next field's number and wire type, or nil at the end of the message.
    mutating func field() throws(Unhandled) -> (number: Int, wireType: WireType)? {
        guard index < end else { return nil }
        let start = index
        let key = try varint()
        // SwiftProtobuf reads a key of at most 5 bytes below 2^32; field 0 and wire types 6, 7 are malformed.
        guard index - start <= 5, key <= UInt64(UInt32.max), key >> 3 != 0,
              let wireType = WireType(rawValue: UInt8(key & 7)) else { throw Unhandled() }
        return (Int(key >> 3), wireType)
    }

    /// A varint field's value as SwiftProtobuf reads it: at most 10 bytes, bits past 64 dropped.
    mutating func varint(_ wireType: WireType) throws(Unhandled) -> UInt64 {
        guard wireType == .varint else { throw Unhandled() }
        return try varint()
    }

    /// A `uint32` field (the varint truncated, as SwiftProtobuf does).
    mutating func uint32(_ wireType: WireType) throws(Unhandled) -> UInt32 {
        UInt32(truncatingIfNeeded: try varint(wireType))
    }

    /// An `int32` field (the varint truncated, as SwiftProtobuf does).
    mutating func int32(_ wireType: WireType) throws(Unhandled) -> Int32 {
        Int32(truncatingIfNeeded: try varint(wireType))
    }

    /// A `bool` field.
    mutating func bool(_ wireType: WireType) throws(Unhandled) -> Bool { try varint(wireType) != 0 }

    /// An enum field; a value this version does not define becomes `UNRECOGNIZED`, as in SwiftProtobuf.
    mutating func enumeration<E: SwiftProtobuf.Enum>(_ wireType: WireType, as type: E.Type = E.self) throws(Unhandled) -> E
    where E.RawValue == Int {
        guard let value = E(rawValue: Int(Int32(truncatingIfNeeded: try varint(wireType)))) else { throw Unhandled() }
        return value
    }

    /// A `double` field.
    mutating func double(_ wireType: WireType) throws(Unhandled) -> Double {
        guard wireType == .fixed64, end - index >= 8 else { throw Unhandled() }
        let bits = UnsafeRawPointer(buffer.baseAddress! + index).loadUnaligned(as: UInt64.self)
        index += 8
        return Double(bitPattern: UInt64(littleEndian: bits))
    }

    /// A `string` field (or an entry of a repeated one); invalid UTF-8 is left to SwiftProtobuf.
    mutating func string(_ wireType: WireType) throws(Unhandled) -> String {
        let body = try lengthDelimited(wireType)
        if body.isEmpty { return "" }
        let utf8 = UnsafeBufferPointer(rebasing: buffer[body])
        // ASCII, the usual case, needs no validation (and the generic validating initializer costs ~10×).
        if utf8.allSatisfy({ $0 < 0x80 }) { return String(decoding: utf8, as: UTF8.self) }
        guard let string = String(validating: utf8, as: UTF8.self) else { throw Unhandled() }
        return string
    }

    /// A `bytes` field.
    mutating func data(_ wireType: WireType) throws(Unhandled) -> Data {
        let body = try lengthDelimited(wireType)
        return body.isEmpty ? Data() : Data(UnsafeBufferPointer(rebasing: buffer[body]))
    }

    /// A sub-message, read by `read` from a reader of its bytes.
    mutating func message<T>(_ wireType: WireType, _ read: (inout ProtobufReader) throws(Unhandled) -> T) throws(Unhandled) -> T {
        let body = try lengthDelimited(wireType)
        var reader = ProtobufReader(buffer, from: body.lowerBound, to: body.upperBound)
        return try read(&reader)
    }

    // MARK: - Implementation

    private mutating func varint() throws(Unhandled) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < end, shift <= 63 {
            let byte = buffer[index]
            index += 1
            value |= UInt64(byte & 0x7F) &<< shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        throw Unhandled()  // truncated, or longer than 10 bytes
    }

    /// The index range of a length-delimited field's body (which is then skipped).
    private mutating func lengthDelimited(_ wireType: WireType) throws(Unhandled) -> Range<Int> {
        guard wireType == .lengthDelimited else { throw Unhandled() }
        let length = try varint()
        guard length < 0x7FFF_FFFF, length <= UInt64(end - index) else { throw Unhandled() }
        let start = index
        index += Int(length)
        return start..<index
    }
}

extension WireEnvelope {
    /// `handEncoded` (a hot message's bytes written by hand), or SwiftProtobuf's `serializedBytes()` when
    /// the hand-written path left the body to it (nil).
    func encodedBytes(handEncoded: [UInt8]?) throws -> [UInt8] {
        if let handEncoded { return handEncoded }
        return try serializedBytes()
    }

    /// The message `read` reads from `bytes` by hand; nil when the bytes hold anything it leaves to
    /// SwiftProtobuf (see ``ProtobufReader``).
    static func handDecoded(_ bytes: [UInt8],
                            read: (inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self) -> Self? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = ProtobufReader(buffer)
            return try? read(&reader)
        }
    }

    /// The message decoded and validated: read by hand by `read`, or by SwiftProtobuf when the bytes hold
    /// anything the hand-written reader leaves to it, so the value or error is always SwiftProtobuf's.
    static func decoded(_ bytes: [UInt8], rawFrames: Int,
                        read: (inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self) throws(WireError) -> Self {
        guard let message = handDecoded(bytes, read: read) else {
            return try decodedBySwiftProtobuf(bytes, rawFrames: rawFrames)
        }
        try message.validate(rawFrames: rawFrames)
        return message
    }
}
