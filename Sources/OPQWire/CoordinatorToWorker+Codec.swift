// The coordinator → worker message sent per command — `Orders` (Dispatch / Kill) and `Heartbeat` —
// written and read by hand (`ProtobufWriter`, `ProtobufReader`): the same bytes and values as
// SwiftProtobuf, at a fraction of its generic visitors' cost. `Welcome` and `Disconnect`, sent once per
// connection, and anything unusual on the wire go through SwiftProtobuf.
// Fields in number order, defaults left out, as each type's generated `traverse` writes them.

extension Opq_V1_CoordinatorToWorker {
    /// The bytes of `serializedBytes()`: written by hand, or by SwiftProtobuf for a `Welcome` or `Disconnect`.
    public func encodedBytes() throws -> [UInt8] { try encodedBytes(handEncoded: handEncoded()) }

    /// The message decoded and validated: read by hand, or by SwiftProtobuf when the bytes hold anything
    /// the hand-written reader leaves to it, so the value or error is always SwiftProtobuf's.
    public static func decoded(_ bytes: [UInt8], rawFrames: Int) throws(WireError) -> Self {
        try decoded(bytes, rawFrames: rawFrames, read: read)
    }

    /// The bytes of `serializedBytes()`, written by hand; nil for a body left to SwiftProtobuf.
    public func handEncoded() -> [UInt8]? {
        var writer = ProtobufWriter(capacity: 128)
        switch body {
        case .heartbeat(let heartbeat): writer.message(2) { $0.unknown(heartbeat.unknownFields) }
        case .orders(let orders): writer.message(3) { orders.write(to: &$0) }
        case nil: break
        case .welcome, .disconnect: return nil
        }
        writer.uint(10, reportsDurable)
        writer.uint(11, leaseEcho)
        writer.unknown(unknownFields)
        return writer.bytes
    }

    /// The message SwiftProtobuf decodes from `bytes`, read by hand; nil when the bytes hold anything
    /// left to SwiftProtobuf (see ``ProtobufReader``), including a `Welcome` or `Disconnect`.
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
                message.body = .orders(try reader.message(wireType, Opq_V1_Orders.read))
            case 10: message.reportsDurable = try reader.varint(wireType)
            case 11: message.leaseEcho = try reader.varint(wireType)
            default: throw .init()
            }
        }
        return message
    }
}

extension Opq_V1_Orders {
    func write(to writer: inout ProtobufWriter) {
        for item in items { writer.message(1) { item.write(to: &$0) } }
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var orders = Self()
        while let (field, wireType) = try reader.field() {
            guard field == 1 else { throw .init() }
            orders.items.append(try reader.message(wireType, Opq_V1_Order.read))
        }
        return orders
    }
}

extension Opq_V1_Order {
    func write(to writer: inout ProtobufWriter) {
        switch kind {
        case .dispatch(let dispatch): writer.message(1) { dispatch.write(to: &$0) }
        case .kill(let kill): writer.message(2) { kill.write(to: &$0) }
        case nil: break
        }
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var order = Self()
        while let (field, wireType) = try reader.field() {
            if case .some = order.kind { throw .init() }
            switch field {
            case 1: order.kind = .dispatch(try reader.message(wireType, Opq_V1_Dispatch.read))
            case 2: order.kind = .kill(try reader.message(wireType, Opq_V1_Kill.read))
            default: throw .init()
            }
        }
        return order
    }
}

extension Opq_V1_Dispatch {
    func write(to writer: inout ProtobufWriter) {
        writer.uint(1, operation)
        writer.uint(2, UInt64(attempt))
        writer.string(3, name)
        writer.uint(4, job)
        writer.string(5, queue)
        if hasWork { writer.message(6) { work.write(to: &$0) } }
        writer.enumeration(7, qos, zero: .default)
        writer.double(8, present: hasTimeoutSeconds ? timeoutSeconds : nil)
        writer.double(9, killGraceSeconds)
        for dependency in dependencies { writer.message(453) { dependency.write(to: &$0) } }
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var dispatch = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: dispatch.operation = try reader.varint(wireType)
            case 2: dispatch.attempt = try reader.uint32(wireType)
            case 3: dispatch.name = try reader.string(wireType)
            case 4: dispatch.job = try reader.varint(wireType)
            case 5: dispatch.queue = try reader.string(wireType)
            case 6:
                guard !dispatch.hasWork else { throw .init() }  // a repeated message field merges: SwiftProtobuf's job
                dispatch.work = try reader.message(wireType, Opq_V1_Work.read)
            case 7: dispatch.qos = try reader.enumeration(wireType)
            case 8: dispatch.timeoutSeconds = try reader.double(wireType)
            case 9: dispatch.killGraceSeconds = try reader.double(wireType)
            case 453: dispatch.dependencies.append(try reader.message(wireType, Opq_V1_DependencyOutcome.read))
            default: throw .init()
            }
        }
        return dispatch
    }
}

extension Opq_V1_DependencyOutcome {
    func write(to writer: inout ProtobufWriter) {
        writer.uint(1, operation)
        writer.string(2, name)
        writer.enumeration(3, outcome, zero: .none)
        writer.data(4, result)
        writer.uint(5, resultOmitted ? 1 : 0)
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var dependency = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: dependency.operation = try reader.varint(wireType)
            case 2: dependency.name = try reader.string(wireType)
            case 3: dependency.outcome = try reader.enumeration(wireType)
            case 4: dependency.result = try reader.data(wireType)
            case 5: dependency.resultOmitted = try reader.bool(wireType)
            default: throw .init()
            }
        }
        return dependency
    }
}

extension Opq_V1_Kill {
    func write(to writer: inout ProtobufWriter) {
        writer.uint(1, operation)
        writer.uint(2, UInt64(attempt))
        writer.enumeration(3, reason, zero: .unspecified)
        writer.double(4, graceSeconds)
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var kill = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: kill.operation = try reader.varint(wireType)
            case 2: kill.attempt = try reader.uint32(wireType)
            case 3: kill.reason = try reader.enumeration(wireType)
            case 4: kill.graceSeconds = try reader.double(wireType)
            default: throw .init()
            }
        }
        return kill
    }
}

extension Opq_V1_Work {
    func write(to writer: inout ProtobufWriter) {
        switch kind {
        case .command(let command): writer.message(1) { command.write(to: &$0) }
        case .commands(let list): writer.message(2) { list.write(to: &$0) }
        case .handler(let handler): writer.message(3) { handler.write(to: &$0) }
        case .handlers(let list): writer.message(570) { list.write(to: &$0) }
        case nil: break
        }
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var work = Self()
        while let (field, wireType) = try reader.field() {
            if case .some = work.kind { throw .init() }  // a repeated oneof merges: SwiftProtobuf's job
            switch field {
            case 1: work.kind = .command(try reader.message(wireType, Opq_V1_Command.read))
            case 2: work.kind = .commands(try reader.message(wireType, Opq_V1_CommandList.read))
            case 3: work.kind = .handler(try reader.message(wireType, Opq_V1_HandlerWork.read))
            case 570: work.kind = .handlers(try reader.message(wireType, Opq_V1_HandlerList.read))
            default: throw .init()
            }
        }
        return work
    }
}

extension Opq_V1_Command {
    func write(to writer: inout ProtobufWriter) {
        for word in argv { writer.string(1, present: word) }
        // A map is written in the dictionary's own order, as SwiftProtobuf writes it by default.
        for (key, value) in environment {
            writer.message(2) {
                $0.string(1, present: key)
                $0.string(2, present: value)
            }
        }
        writer.string(3, present: hasWorkingDirectory ? workingDirectory : nil)
        for path in inputs { writer.string(140, present: path) }
        for path in outputs { writer.string(141, present: path) }
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var command = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: command.argv.append(try reader.string(wireType))
            case 2:
                let (key, value) = try reader.message(wireType, readEnvironmentEntry)
                command.environment[key] = value
            case 3: command.workingDirectory = try reader.string(wireType)
            case 140: command.inputs.append(try reader.string(wireType))
            case 141: command.outputs.append(try reader.string(wireType))
            default: throw .init()
            }
        }
        return command
    }

    /// One `map<string, string>` entry: key 1, value 2, each "" when absent, the last one winning.
    private static func readEnvironmentEntry(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> (String, String) {
        var key = "", value = ""
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: key = try reader.string(wireType)
            case 2: value = try reader.string(wireType)
            default: throw .init()
            }
        }
        return (key, value)
    }
}

extension Opq_V1_CommandList {
    func write(to writer: inout ProtobufWriter) {
        for command in commands { writer.message(1) { command.write(to: &$0) } }
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var list = Self()
        while let (field, wireType) = try reader.field() {
            guard field == 1 else { throw .init() }
            list.commands.append(try reader.message(wireType, Opq_V1_Command.read))
        }
        return list
    }
}

extension Opq_V1_HandlerWork {
    func write(to writer: inout ProtobufWriter) {
        writer.string(1, name)
        writer.data(2, payload)
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var handler = Self()
        while let (field, wireType) = try reader.field() {
            switch field {
            case 1: handler.name = try reader.string(wireType)
            case 2: handler.payload = try reader.data(wireType)
            default: throw .init()
            }
        }
        return handler
    }
}

extension Opq_V1_HandlerList {
    func write(to writer: inout ProtobufWriter) {
        for call in calls { writer.message(571) { call.write(to: &$0) } }
        writer.unknown(unknownFields)
    }

    static func read(_ reader: inout ProtobufReader) throws(ProtobufReader.Unhandled) -> Self {
        var list = Self()
        while let (field, wireType) = try reader.field() {
            guard field == 571 else { throw .init() }
            list.calls.append(try reader.message(wireType, Opq_V1_HandlerWork.read))
        }
        return list
    }
}
