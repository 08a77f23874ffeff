import Foundation
import OPQCore
import SwiftProtobuf

/// Protobuf's binary wire format written by hand, for the few messages sent per command
/// (`WorkerMessage+Codec.swift`, `CoordinatorToWorker+Codec.swift`).
///
/// Callers write fields in field-number order and leave defaults out exactly as SwiftProtobuf's generated
/// `traverse` does, so the bytes are the ones `serializedBytes()` writes: the methods without `present:`
/// skip a field that holds its proto3 default (0, empty, `false`, a double whose bit pattern is 0 — so
/// `-0.0` is written); `present:` writes an explicit-presence (`optional`) field whenever it is set.
/// A sub-message's length is written in front of it once its body is written (one byte reserved,
/// moved up in the rare case the body needs a longer length).
struct ProtobufWriter {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Empties the bytes, keeping their storage (a scratch writer reused for one message after another).
    mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    /// Protobuf's wire types (the low 3 bits of a field's key).
    enum WireType: UInt64 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2
    }

    mutating func varint(_ value: UInt64) { LEB128.append(value, to: &bytes) }

    mutating func key(_ field: Int, _ wireType: WireType) { varint(UInt64(field) << 3 | wireType.rawValue) }

    /// A `uint64`, `uint32` or `bool` field (omitted when 0).
    mutating func uint(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        key(field, .varint)
        varint(value)
    }

    /// An `int32` field with explicit presence: negative values take 10 bytes (sign-extended), as in protobuf.
    mutating func int32(_ field: Int, present value: Int32?) {
        guard let value else { return }
        key(field, .varint)
        varint(UInt64(bitPattern: Int64(value)))
    }

    /// An enum field (omitted when it equals the enum's zero value `zero`, as the generated code compares).
    mutating func enumeration<E: SwiftProtobuf.Enum>(_ field: Int, _ value: E, zero: E) where E.RawValue == Int {
        guard value != zero else { return }
        key(field, .varint)
        varint(UInt64(bitPattern: Int64(value.rawValue)))
    }

    /// A `double` field (omitted when its bit pattern is 0).
    mutating func double(_ field: Int, _ value: Double) {
        guard value.bitPattern != 0 else { return }
        double(field, present: value)
    }

    /// A `double` field with explicit presence.
    mutating func double(_ field: Int, present value: Double?) {
        guard let value else { return }
        key(field, .fixed64)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `string` field (omitted when empty).
    mutating func string(_ field: Int, _ value: String) {
        guard !value.isEmpty else { return }
        string(field, present: value)
    }

    /// A `string` field with explicit presence, or one entry of a repeated or map `string` field.
    mutating func string(_ field: Int, present value: String?) {
        guard var value else { return }
        key(field, .lengthDelimited)
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// A `bytes` field (omitted when empty).
    mutating func data(_ field: Int, _ value: Data) {
        guard !value.isEmpty else { return }
        key(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A length-delimited field holding bytes already encoded (a message's), written even when empty.
    mutating func encoded(_ field: Int, _ value: [UInt8]) {
        key(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A sub-message (a singular message field that is set, a oneof case, or one entry of a repeated
    /// message or map field): `body` writes its fields.
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        key(field, .lengthDelimited)
        let lengthIndex = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - lengthIndex - 1
        if length < 0x80 {
            bytes[lengthIndex] = UInt8(length)
        } else {
            var prefix: [UInt8] = []
            LEB128.append(UInt64(length), to: &prefix)
            bytes.replaceSubrange(lengthIndex...lengthIndex, with: prefix)
        }
    }

    /// The fields a decoded message kept without knowing them; SwiftProtobuf writes them last.
    mutating func unknown(_ storage: UnknownStorage) {
        if !storage.data.isEmpty { bytes.append(contentsOf: storage.data) }
    }
}
