// The worker → coordinator message sent per command — `Reports` (Started / Finished / Progress /
// OutputChunk) and `Heartbeat` — written and read by hand (`ProtobufWriter`, `ProtobufReader`): the
// same bytes and values as SwiftProtobuf, at a fraction of its generic visitors' cost. `Register` and
// `Goodbye`, sent once per connection, and anything unusual on the wire go through SwiftProtobuf.
// Fields in number order, defaults left out, as each type's generated `traverse` writes them.

extension Opq_V1_WorkerMessage {
    /// The bytes of `serializedBytes()`: written by hand, or by SwiftProtobuf for a `Register` or `Goodbye`.
    public func encodedBytes() throws -> [UInt8] { try encodedBytes(handEncoded: handEncoded()) }

    /// The message decoded and validated: read by hand, or by SwiftProtobuf when the bytes hold anything
    /// the hand-written reader leaves to it, so the value or error is always SwiftProtobuf's.
    public static func decoded(_ bytes: [UInt8], rawFrames: Int) throws(WireError) -> Self {
        try decoded(bytes, rawFrames: rawFrames, read: read)
    }

    /// The bytes of `serializedBytes()`, written by hand; nil for a body left to SwiftProtobuf.
    public func handEncoded() -> [UInt8]? {
        var writer = ProtobufWriter(capacity: 64)
        switch body {
        case .heartbeat(let heartbeat): writer.message(2) { $0.unknown(heartbeat.unknownFields) }
        case .reports(let reports): writer.message(3) { reports.write(to: &$0) }
        case nil: break
        case .register, .goodbye: return nil
        }
        writer.uint(10, leaseRequest)
        writer.unknown(unknownFields)
        return writer.bytes
    }

    /// The message SwiftProtobuf decodes from `bytes`, read by hand; nil when the bytes hold anything
    /// left to SwiftProtobuf (see ``ProtobufReader``), including a `Register` or `Goodbye`.
    public static func handDecoded(_ bytes: [UInt8]) -> Self? { handDecoded(bytes, read: read) }

    private static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var message = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 2:
                if case .some = message.body { throw .init() }  // a repeated oneof merges: SwiftProtobuf's job
                message.body = .heartbeat(try reader.message(wireType, Opq_V1_Heartbeat.read))
            case 3:
                if case .some = message.body { throw .init() }
                message.body = .reports(try reader.message(wireType, Opq_V1_Reports.read))
            case 10: message.leaseRequest = try reader.varint(wireType)
            default: throw .init()
            }
        }
        return message
    }
}

extension Opq_V1_Heartbeat {
    /// An empty message: any field in it is an unknown field, kept by SwiftProtobuf.
    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        guard try reader.field() == nil else { throw .init() }
        return Self()
    }
}

extension Opq_V1_Reports {
    func write(to writer: inout ProtobufWriter) {
        for item in items { writer.message(1) { item.write(to: &$0) } }
        writer.uint(2, sequence)
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var reports = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: reports.items.append(try reader.message(wireType, Opq_V1_Report.read))
            case 2: reports.sequence = try reader.varint(wireType)
            default: throw .init()
            }
        }
        return reports
    }
}

extension Opq_V1_Report {
    func write(to writer: inout ProtobufWriter) {
        switch kind {
        case .started(let ref): writer.message(1) { ref.write(to: &$0) }
        case .finished(let finished): writer.message(2) { finished.write(to: &$0) }
        case .progress(let progress): writer.message(3) { progress.write(to: &$0) }
        case .output(let chunk): writer.message(100) { chunk.write(to: &$0) }
        case nil: break
        }
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var report = Self()
        while let (field, wireType) = try reader.field() {
            if case .some = report.kind { throw .init() }
            switch field {
            case 1: report.kind = .started(try reader.message(wireType, Opq_V1_AttemptRef.read))
            case 2: report.kind = .finished(try reader.message(wireType, Opq_V1_Finished.read))
            case 3: report.kind = .progress(try reader.message(wireType, Opq_V1_Progress.read))
            case 100: report.kind = .output(try reader.message(wireType, Opq_V1_OutputChunk.read))
            default: throw .init()
            }
        }
        return report
    }
}

extension Opq_V1_AttemptRef {
    func write(to writer: inout ProtobufWriter) {
        writer.uint(1, operation)
        writer.uint(2, UInt64(attempt))
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var ref = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: ref.operation = try reader.varint(wireType)
            case 2: ref.attempt = try reader.uint32(wireType)
            default: throw .init()
            }
        }
        return ref
    }
}

extension Opq_V1_Finished {
    func write(to writer: inout ProtobufWriter) {
        writer.uint(1, operation)
        writer.uint(2, UInt64(attempt))
        writer.enumeration(3, status, zero: .unspecified)
        writer.enumeration(4, reason, zero: .none)
        writer.int32(5, present: hasExitCode ? exitCode : nil)
        writer.int32(6, present: hasSignal ? signal : nil)
        writer.double(7, durationSeconds)
        if hasStdout { writer.message(8) { stdout.write(to: &$0) } }
        if hasStderr { writer.message(9) { stderr.write(to: &$0) } }
        writer.string(10, errorMessage)
        if hasResult { writer.message(450) { result.write(to: &$0) } }
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var finished = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: finished.operation = try reader.varint(wireType)
            case 2: finished.attempt = try reader.uint32(wireType)
            case 3: finished.status = try reader.enumeration(wireType)
            case 4: finished.reason = try reader.enumeration(wireType)
            case 5: finished.exitCode = try reader.int32(wireType)
            case 6: finished.signal = try reader.int32(wireType)
            case 7: finished.durationSeconds = try reader.double(wireType)
            case 8:
                guard !finished.hasStdout else { throw .init() }  // a repeated message field merges: SwiftProtobuf's job
                finished.stdout = try reader.message(wireType, Opq_V1_OutputTail.read)
            case 9:
                guard !finished.hasStderr else { throw .init() }
                finished.stderr = try reader.message(wireType, Opq_V1_OutputTail.read)
            case 10: finished.errorMessage = try reader.string(wireType)
            case 450:
                guard !finished.hasResult else { throw .init() }
                finished.result = try reader.message(wireType, Opq_V1_OutputTail.read)
            default: throw .init()
            }
        }
        return finished
    }
}

extension Opq_V1_OutputTail {
    func write(to writer: inout ProtobufWriter) {
        writer.uint(1, UInt64(frame))
        writer.uint(2, totalBytes)
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var tail = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: tail.frame = try reader.uint32(wireType)
            case 2: tail.totalBytes = try reader.varint(wireType)
            default: throw .init()
            }
        }
        return tail
    }
}

extension Opq_V1_Progress {
    func write(to writer: inout ProtobufWriter) {
        writer.uint(1, operation)
        writer.uint(2, UInt64(attempt))
        writer.double(3, present: hasFraction ? fraction : nil)
        writer.string(4, message)
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var progress = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: progress.operation = try reader.varint(wireType)
            case 2: progress.attempt = try reader.uint32(wireType)
            case 3: progress.fraction = try reader.double(wireType)
            case 4: progress.message = try reader.string(wireType)
            default: throw .init()
            }
        }
        return progress
    }
}

extension Opq_V1_OutputChunk {
    func write(to writer: inout ProtobufWriter) {
        writer.uint(1, operation)
        writer.uint(2, UInt64(attempt))
        writer.enumeration(3, stream, zero: .unspecified)
        writer.uint(4, offset)
        writer.uint(5, UInt64(frame))
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var chunk = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: chunk.operation = try reader.varint(wireType)
            case 2: chunk.attempt = try reader.uint32(wireType)
            case 3: chunk.stream = try reader.enumeration(wireType)
            case 4: chunk.offset = try reader.varint(wireType)
            case 5: chunk.frame = try reader.uint32(wireType)
            default: throw .init()
            }
        }
        return chunk
    }
}
