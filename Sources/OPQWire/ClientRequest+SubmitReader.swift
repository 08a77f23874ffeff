import OPQCore

// A client's `Submit` read by hand, straight into the core's `Submission` (issue 19): a 200,000-operation
// job file cost the coordinator ≈ 0.36 s in SwiftProtobuf's decoding, its validation and the conversion
// of every generated `OperationSpec`; read here, no operation ever becomes a protobuf message.
//
// The hand-written path takes the common shape — every field of `Submit`, `QueueSettings`, `OperationSpec`
// and `DependencyRef`, work that is absent or one command without an environment — and checks what
// ``Opq_V1_ClientRequest``'s validation checks. Anything else (labels, an environment, `dependants`,
// other work, a field seen twice where protobuf would merge it, anything ``ProtobufReader`` leaves to
// SwiftProtobuf) and anything invalid goes through SwiftProtobuf and the validation as before, so the
// value or the error is always theirs.

/// A client's request as the coordinator acts on it (``Frames/decodeClientRequest(_:)``).
public struct ReceivedClientRequest {
    /// The request. For a Submit, `body` is `.submit` with an empty message: what it carried is ``submission``.
    public var message: Opq_V1_ClientRequest
    /// A Submit's operations, queue settings and idempotency key as the core takes them; nil for any other request.
    public var submission: Submission?
}

extension Frames {
    /// Decodes and validates a client's request received on the coordinator's ROUTER socket (as
    /// ``decodeRouted(_:as:)`` with `Opq_V1_ClientRequest`, the same errors), a Submit straight into
    /// the core's ``Submission``.
    public static func decodeClientRequest(_ frames: [[UInt8]]) throws(WireError) -> ReceivedClientRequest {
        guard !frames.isEmpty else { throw .missingIdentity }
        let (bytes, rawFrames) = try messageFrame(frames, from: 1)
        if let received = Opq_V1_ClientRequest.handReadSubmit(bytes) { return received }
        var message = try Opq_V1_ClientRequest.decoded(bytes, rawFrames: rawFrames)
        guard case .submit(let submit) = message.body else { return ReceivedClientRequest(message: message, submission: nil) }
        var submission = Submission(submit)
        submission.idempotencyKey = submit.idempotencyKey
        message.submit = Opq_V1_Submit()
        return ReceivedClientRequest(message: message, submission: submission)
    }
}

extension Opq_V1_ClientRequest {
    /// The Submit request in `bytes` read by hand and validated; nil for another request, and for
    /// anything left to SwiftProtobuf and the validation (see the top of this file).
    public static func handReadSubmit(_ bytes: [UInt8]) -> ReceivedClientRequest? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = ProtobufReader(buffer)
            var submitReader = SubmitReader()
            return try? submitReader.request(&reader)
        }
    }
}

/// Reads a `ClientRequest` holding a `Submit` into the core's values; throws ``ProtobufReader/Unhandled``
/// for what it leaves to SwiftProtobuf, including every value the validation would refuse. Its scratch
/// arrays are reused from one operation to the next; each operation keeps exact-size copies.
private struct SubmitReader {
    typealias Unhandled = ProtobufReader.Unhandled

    private var argv: [String] = []
    private var dependencies: [DependencyReference] = []

    mutating func request(_ reader: inout ProtobufReader) throws(Unhandled) -> ReceivedClientRequest {
        var message = Opq_V1_ClientRequest()
        var submission: Submission?
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: message.requestID = try reader.varint(wireType)
            case 2:
                guard submission == nil else { throw .init() }  // a repeated oneof merges: SwiftProtobuf's job
                submission = try reader.message(wireType) { (body) throws(Unhandled) in try self.submit(&body) }
            default: throw .init()  // another request: SwiftProtobuf's
            }
        }
        guard let submission else { throw .init() }
        message.submit = Opq_V1_Submit()
        return ReceivedClientRequest(message: message, submission: submission)
    }

    private mutating func submit(_ reader: inout ProtobufReader) throws(Unhandled) -> Submission {
        var operations: [OperationSpec] = []
        operations.reserveCapacity(Self.count(of: 1, in: reader))
        var queueSettings: [(queue: String, settings: QueueSettings)] = []
        var key = ""
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: operations.append(try reader.message(wireType) { (body) throws(Unhandled) in try self.operation(&body) })
            case 2: queueSettings.append(try reader.message(wireType, Self.queueSettings))
            case 3: key = try reader.string(wireType)
            default: throw .init()
            }
        }
        try Self.check(operations.count <= WireLimits.maxOperationsPerSubmission && queueSettings.count <= WireLimits.maxListEntries
                       && Self.isName(key))
        var submission = Submission(operations, queueSettings: queueSettings)
        submission.idempotencyKey = key
        return submission
    }

    private mutating func operation(_ reader: inout ProtobufReader) throws(Unhandled) -> OperationSpec {
        var name = "", queue = "", work = Work.empty, hasWork = false
        dependencies.removeAll(keepingCapacity: true)
        var priority: Int32 = 0, qos = Opq_V1_QualityOfService.default, requires = Opq_V1_Requirement.any
        var retries: UInt32 = 0, timeout: Double?, barrier = false
        var cpus: UInt32 = 0, memoryBytes: UInt64 = 0, reservation: UInt64 = 0, cancelled = false
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: name = try reader.string(wireType)
            case 2: queue = try reader.string(wireType)
            case 3:
                guard !hasWork else { throw .init() }  // a repeated message field merges: SwiftProtobuf's job
                hasWork = true
                work = try reader.message(wireType) { (body) throws(Unhandled) in try self.work(&body) }
            case 4: dependencies.append(try reader.message(wireType, Self.dependency))
            case 5:  // sint32: the varint truncated to 32 bits, then zigzag
                let bits = try reader.uint32(wireType)
                priority = Int32(bitPattern: bits >> 1) ^ -Int32(bitPattern: bits & 1)
            case 6: qos = try reader.enumeration(wireType)
            case 7: requires = try reader.enumeration(wireType)
            case 8: retries = try reader.uint32(wireType)
            case 9: timeout = try reader.double(wireType)
            case 11: barrier = try reader.bool(wireType)
            case 360: cpus = try reader.uint32(wireType)
            case 361: memoryBytes = try reader.varint(wireType)
            case 430: reservation = try reader.varint(wireType)
            case 431: cancelled = try reader.bool(wireType)
            default: throw .init()  // labels (10), dependants (180), unknown fields
            }
        }
        // `Opq_V1_OperationSpec.validate`'s checks (labels and dependants are not read here).
        try Self.check(Self.isName(name) && Self.isName(queue) && dependencies.count <= WireLimits.maxListEntries
                       && (reservation == 0 || OperationID(reservation).isReservation) && qos.isKnown && requires.isKnown
                       && retries <= WireLimits.maxRetries && cpus <= WireLimits.maxCpus && memoryBytes <= WireLimits.maxMemory)
        return OperationSpec(wireName: name, queue: queue, work: work, dependencies: dependencies.isEmpty ? [] : dependencies.map { $0 },
                             priority: priority, qos: qos, requires: requires, retries: retries, timeout: timeout, labels: [:],
                             barrier: barrier, dependants: [], cpus: cpus, memoryBytes: memoryBytes, reservation: reservation,
                             cancelled: cancelled)
    }

    /// `Work`: absent kind or one command; other kinds are SwiftProtobuf's.
    private mutating func work(_ reader: inout ProtobufReader) throws(Unhandled) -> Work {
        var work = Work.empty, hasKind = false
        while let (field, wireType) = try reader.field() {
            guard field == 1, !hasKind else { throw .init() }  // other kinds; a repeated oneof merges
            hasKind = true
            work = .command(try reader.message(wireType) { (body) throws(Unhandled) in try self.command(&body) })
        }
        return work
    }

    /// A `Command` without an environment (a map: SwiftProtobuf's).
    private mutating func command(_ reader: inout ProtobufReader) throws(Unhandled) -> Command {
        argv.removeAll(keepingCapacity: true)
        var directory: String?, inputs: [String] = [], outputs: [String] = []
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: argv.append(try reader.string(wireType))
            case 3: directory = try reader.string(wireType)
            case 140: inputs.append(try reader.string(wireType))
            case 141: outputs.append(try reader.string(wireType))
            default: throw .init()
            }
        }
        // `Check.command(strict: false)`: sizes only.
        try Self.check(argv.count <= WireLimits.maxListEntries && inputs.count <= WireLimits.maxListEntries
                       && outputs.count <= WireLimits.maxListEntries && (directory.map(Self.isName) ?? true))
        var command = Command(argv.map { $0 }, workingDirectory: directory)  // an exact-size copy of the scratch
        command.inputs = inputs
        command.outputs = outputs
        return command
    }

    /// A `DependencyRef` with its target set once, valid.
    private static func dependency(_ reader: inout ProtobufReader) throws(Unhandled) -> DependencyReference {
        var target: DependencyReference?
        while let (field, wireType) = try reader.field() {
            guard target == nil else { throw .init() }  // a oneof set twice: SwiftProtobuf's
            switch field {
            case 1:
                let name = try reader.string(wireType)
                try check(!name.isEmpty && isName(name))
                target = .name(name)
            case 2:
                let id = try reader.varint(wireType)
                try check(id != 0)
                target = .id(OperationID(id))
            default: throw .init()
            }
        }
        guard let target else { throw .init() }  // missing: the validation's error
        return target
    }

    private static func queueSettings(_ reader: inout ProtobufReader) throws(Unhandled) -> (queue: String, settings: QueueSettings) {
        var queue = "", maxConcurrent: Int32?, suspended: Bool?
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: queue = try reader.string(wireType)
            case 2: maxConcurrent = try reader.int32(wireType)
            case 3: suspended = try reader.bool(wireType)
            default: throw .init()
            }
        }
        try check(isName(queue))
        return Opq_V1_QueueSettings.core(queue: queue, maxConcurrent: maxConcurrent, suspended: suspended)
    }

    /// How many length-delimited fields numbered `number` the rest of `reader`'s message holds, as far
    /// as a copy of it reads varints and length-delimited fields (a capacity to reserve, no more).
    private static func count(of number: Int, in reader: ProtobufReader) -> Int {
        var reader = reader, count = 0
        while let (field, wireType) = try? reader.field() {
            switch wireType {
            case .lengthDelimited:
                guard (try? reader.message(wireType, { _ in () })) != nil else { return count }
                if field == number { count += 1 }
            case .varint:
                guard (try? reader.varint(wireType)) != nil else { return count }
            default:
                return count
            }
        }
        return count
    }

    /// A name `Check.name` accepts (at most `maxNameBytes` bytes).
    private static func isName(_ value: String) -> Bool { value.utf8.count <= WireLimits.maxNameBytes }

    /// Leaves to SwiftProtobuf and the validation what does not hold `condition`.
    private static func check(_ condition: Bool) throws(Unhandled) {
        if !condition { throw .init() }
    }
}
