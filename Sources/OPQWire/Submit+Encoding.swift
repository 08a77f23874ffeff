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
        var submit = ProtobufWriter(capacity: front + submission.operations.count * 64 + 64)
        var scratch = ProtobufWriter(capacity: 256)
        do {
            for spec in submission.operations {
                if scratch.operationSpec(spec) {
                    submit.encoded(1, scratch.bytes)
                } else {
                    submit.encoded(1, try Opq_V1_OperationSpec(spec).serializedBytes() as [UInt8])
                }
            }
            for settings in submission.queueSettings {
                submit.encoded(2, try Opq_V1_QueueSettings(queue: settings.queue, settings.settings).serializedBytes() as [UInt8])
            }
        } catch {
            throw .invalidField(Opq_V1_Submit.protoMessageName, problem: "cannot be encoded: \(error)")
        }
        submit.string(3, idempotencyKey)
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
        var head = ProtobufWriter(capacity: 24)
        head.uint(1, requestID)
        head.key(2, .lengthDelimited)
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

extension ProtobufWriter {
    /// Replaces the bytes with the `OperationSpec` message of `spec` — SwiftProtobuf's bytes for
    /// `Opq_V1_OperationSpec(spec)`: fields in number order, proto3 defaults left out, `dependants`
    /// packed — written straight from the spec, without building the message and its storage first
    /// (issue 19: most of an operation's encoding went there and to SwiftProtobuf's visitor). Returns
    /// false, leaving `bytes` unspecified, for what it does not write (maps: `labels`, a command's
    /// `environment`; work other than none or one command): the caller encodes those with SwiftProtobuf.
    mutating func operationSpec(_ spec: OperationSpec) -> Bool {
        guard spec.labels.isEmpty else { return false }
        reset()
        string(1, spec.name)
        string(2, spec.queue)
        switch spec.work {
        case .empty: break
        case .command(let command):
            guard command.environment.isEmpty else { return false }
            // Work { command = 1 } around Command { argv = 1, working_directory = 3, inputs = 140, outputs = 141 }.
            var size = 0
            for argument in command.argv { size += Self.stringSize(1, argument) }
            if let directory = command.workingDirectory { size += Self.stringSize(3, directory) }
            for path in command.inputs { size += Self.stringSize(140, path) }
            for path in command.outputs { size += Self.stringSize(141, path) }
            key(3, .lengthDelimited)
            varint(UInt64(Self.lengthSize(1, size)))
            key(1, .lengthDelimited)
            varint(UInt64(size))
            for argument in command.argv { string(1, present: argument) }
            string(3, present: command.workingDirectory)
            for path in command.inputs { string(140, present: path) }
            for path in command.outputs { string(141, present: path) }
        case .commands, .handler, .handlers:
            return false
        }
        for dependency in spec.dependencies {
            // DependencyRef { oneof: name = 1, id = 2 }: a set oneof field is written even when empty or 0.
            switch dependency {
            case .name(let name):
                key(4, .lengthDelimited)
                varint(UInt64(Self.stringSize(1, name)))
                string(1, present: name)
            case .id(let id):
                key(4, .lengthDelimited)
                varint(UInt64(Self.varintSize(2 << 3) + Self.varintSize(id.rawValue)))
                key(2, .varint)
                varint(id.rawValue)
            }
        }
        let priority = spec.priority.wireValue
        uint(5, UInt64(UInt32(bitPattern: (priority << 1) ^ (priority >> 31))))  // sint32: zigzag (0 stays 0)
        enumeration(6, Opq_V1_QualityOfService(spec.qualityOfService), zero: .default)
        enumeration(7, Opq_V1_Requirement(spec.requires), zero: .any)
        uint(8, UInt64(UInt32(clamping: spec.retries)))
        double(9, present: spec.timeout)
        uint(11, spec.isBarrier ? 1 : 0)
        if !spec.dependants.isEmpty {
            key(180, .lengthDelimited)
            varint(UInt64(spec.dependants.reduce(0) { $0 + Self.varintSize($1.rawValue) }))
            for dependant in spec.dependants { varint(dependant.rawValue) }
        }
        if spec.resources.cpus != 1 { uint(360, UInt64(UInt32(clamping: spec.resources.cpus))) }
        uint(361, UInt64(clamping: spec.resources.memory))
        uint(430, spec.reservation?.rawValue ?? 0)
        uint(431, spec.isCancelled ? 1 : 0)
        return true
    }

    /// Bytes of a varint.
    static func varintSize(_ value: UInt64) -> Int { value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7 }

    /// Bytes of a length-delimited field `field` holding `length` bytes.
    static func lengthSize(_ field: Int, _ length: Int) -> Int { varintSize(UInt64(field) << 3 | 2) + varintSize(UInt64(length)) + length }

    /// Bytes of string field `field` holding `value`.
    static func stringSize(_ field: Int, _ value: String) -> Int { lengthSize(field, value.utf8.count) }
}
