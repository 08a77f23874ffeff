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
        var scratch = WireBytes()
        do {
            for spec in submission.operations {
                if scratch.operationSpec(spec) {
                    submit.field(1, scratch.bytes)
                } else {
                    submit.field(1, try Opq_V1_OperationSpec(spec).serializedBytes() as [UInt8])
                }
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
struct WireBytes {
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

extension WireBytes {
    /// Replaces `bytes` with the `OperationSpec` message of `spec` — SwiftProtobuf's bytes for
    /// `Opq_V1_OperationSpec(spec)`: fields in number order, proto3 defaults left out, `dependants`
    /// packed — written straight from the spec, without building the message and its storage first
    /// (issue 19: most of an operation's encoding went there and to SwiftProtobuf's visitor). Returns
    /// false, leaving `bytes` unspecified, for what it does not write (maps: `labels`, a command's
    /// `environment`; work other than none or one command): the caller encodes those with SwiftProtobuf.
    mutating func operationSpec(_ spec: OperationSpec) -> Bool {
        guard spec.labels.isEmpty else { return false }
        bytes.removeAll(keepingCapacity: true)
        if !spec.name.isEmpty { string(1, spec.name) }
        if !spec.queue.isEmpty { string(2, spec.queue) }
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
            tag(3, wireType: 2)
            varint(UInt64(Self.lengthSize(1, size)))
            tag(1, wireType: 2)
            varint(UInt64(size))
            for argument in command.argv { string(1, argument) }
            if let directory = command.workingDirectory { string(3, directory) }
            for path in command.inputs { string(140, path) }
            for path in command.outputs { string(141, path) }
        case .commands, .handler, .handlers:
            return false
        }
        for dependency in spec.dependencies {
            // DependencyRef { oneof: name = 1, id = 2 }: a set oneof field is written even when empty or 0.
            switch dependency {
            case .name(let name):
                tag(4, wireType: 2)
                varint(UInt64(Self.stringSize(1, name)))
                string(1, name)
            case .id(let id):
                tag(4, wireType: 2)
                varint(UInt64(Self.varintSize(2 << 3) + Self.varintSize(id.rawValue)))
                tag(2, wireType: 0)
                varint(id.rawValue)
            }
        }
        let priority = spec.priority.wireValue
        if priority != 0 {
            tag(5, wireType: 0)
            varint(UInt64(UInt32(bitPattern: (priority << 1) ^ (priority >> 31))))  // sint32: zigzag
        }
        enumeration(6, Opq_V1_QualityOfService(spec.qualityOfService).rawValue)
        enumeration(7, Opq_V1_Requirement(spec.requires).rawValue)
        let retries = UInt32(clamping: spec.retries)
        if retries != 0 {
            tag(8, wireType: 0)
            varint(UInt64(retries))
        }
        if let timeout = spec.timeout {
            tag(9, wireType: 1)
            withUnsafeBytes(of: timeout.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        }
        if spec.isBarrier {
            tag(11, wireType: 0)
            varint(1)
        }
        if !spec.dependants.isEmpty {
            tag(180, wireType: 2)
            varint(UInt64(spec.dependants.reduce(0) { $0 + Self.varintSize($1.rawValue) }))
            for dependant in spec.dependants { varint(dependant.rawValue) }
        }
        if spec.resources.cpus != 1 {
            let cpus = UInt32(clamping: spec.resources.cpus)
            if cpus != 0 {
                tag(360, wireType: 0)
                varint(UInt64(cpus))
            }
        }
        let memory = UInt64(clamping: spec.resources.memory)
        if memory != 0 {
            tag(361, wireType: 0)
            varint(memory)
        }
        if let reservation = spec.reservation?.rawValue, reservation != 0 {
            tag(430, wireType: 0)
            varint(reservation)
        }
        if spec.isCancelled {
            tag(431, wireType: 0)
            varint(1)
        }
        return true
    }

    /// A string field (written even when empty: callers leave out proto3's defaults themselves).
    private mutating func string(_ field: UInt64, _ value: String) {
        tag(field, wireType: 2)
        varint(UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    /// An enum field; 0 (the default) is left out. Negative values take ten bytes, as int32 does.
    private mutating func enumeration(_ field: UInt64, _ value: Int) {
        guard value != 0 else { return }
        tag(field, wireType: 0)
        varint(UInt64(bitPattern: Int64(value)))
    }

    /// Bytes of a varint.
    static func varintSize(_ value: UInt64) -> Int { value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7 }

    /// Bytes of a length-delimited field `field` holding `length` bytes.
    static func lengthSize(_ field: UInt64, _ length: Int) -> Int { varintSize(field << 3 | 2) + varintSize(UInt64(length)) + length }

    /// Bytes of string field `field` holding `value`.
    static func stringSize(_ field: UInt64, _ value: String) -> Int { lengthSize(field, value.utf8.count) }
}
