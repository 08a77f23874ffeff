import OPQCore
import SwiftProtobuf

/// A big submission encoded without building its whole protobuf message first: each operation becomes
/// an `OperationSpec` message only while its bytes are written, so a 200,000-operation job file costs the
/// sending program its encoded bytes (≈ 60 B per operation) rather than every operation's message tree
/// at once (≈ 300 B more per operation, the CLI's peak before).
///
/// The bytes are the ones SwiftProtobuf writes for the same message (fields in number order:
/// `ClientRequest.request_id` 1, `submit` 2; `Submit.operations` 1, `queue_settings` 2,
/// `idempotency_key` 3), so the coordinator decodes them as any `Submit`.
extension Opq_V1_Submit {
    /// The encoded `Submit` of `submission` with `idempotencyKey`: the bytes of
    /// `Opq_V1_Submit(submission, idempotencyKey:).serializedBytes()`, built one operation at a time.
    /// - Throws: what SwiftProtobuf's encoding throws, as `WireError.invalidField` (as ``Frames/encode(_:raw:)``).
    public static func encodedBytes(_ submission: Submission, idempotencyKey: String = "", reserving front: Int = 0) throws(WireError) -> [UInt8] {
        var submit = WireBytes()
        submit.bytes.reserveCapacity(front + submission.operations.count * 64 + 64)
        do {
            for spec in submission.operations {
                submit.field(1, try Opq_V1_OperationSpec(spec).serializedBytes() as [UInt8])
            }
            for settings in submission.queueSettings {
                submit.field(2, try Opq_V1_QueueSettings(queue: settings.queue, settings.settings).serializedBytes() as [UInt8])
            }
        } catch {
            throw .invalidField(Opq_V1_Submit.protoMessageName, problem: "cannot be encoded: \(error)")
        }
        if !idempotencyKey.isEmpty { submit.field(3, Array(idempotencyKey.utf8)) }
        return submit.bytes
    }
}

extension Opq_V1_ClientRequest {
    /// The encoded request `requestID` submitting `submission` with `idempotencyKey`: the bytes of
    /// `Opq_V1_ClientRequest.request(requestID) { $0.submit = Opq_V1_Submit(submission, idempotencyKey:) }`,
    /// built one operation at a time (``Opq_V1_Submit/encodedBytes(_:idempotencyKey:reserving:)``).
    public static func encodedSubmit(_ requestID: UInt64, _ submission: Submission, idempotencyKey: String = "") throws(WireError) -> [UInt8] {
        // Room for the request's own fields, which go in front of the Submit's bytes, moved up in place
        // (no second copy of a body that may be megabytes).
        var bytes = try Opq_V1_Submit.encodedBytes(submission, idempotencyKey: idempotencyKey, reserving: 24)
        var head = WireBytes()
        if requestID != 0 {
            head.tag(1, wireType: 0)
            head.varint(requestID)
        }
        head.tag(2, wireType: 2)
        head.varint(UInt64(bytes.count))
        bytes.insert(contentsOf: head.bytes, at: 0)
        return bytes
    }
}

extension Frames {
    /// The frames of a request whose body is already encoded (``Opq_V1_ClientRequest/encodedSubmit(_:_:idempotencyKey:)``),
    /// checked against the frame limit like ``encode(_:raw:)``.
    public static func encode(encodedBody body: [UInt8]) throws(WireError) -> [[UInt8]] {
        guard body.count <= WireLimits.maxFrameBytes else {
            throw .frameTooLarge(frame: 1, bytes: body.count, limit: WireLimits.maxFrameBytes)
        }
        return [signature, body]
    }
}

/// Protobuf's wire format, the few pieces a hand-built message needs.
private struct WireBytes {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) { LEB128.append(value, to: &bytes) }

    mutating func tag(_ field: UInt64, wireType: UInt64) { varint(field << 3 | wireType) }

    /// A length-delimited field (a message or a string).
    mutating func field(_ field: UInt64, _ value: [UInt8]) {
        tag(field, wireType: 2)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }
}
