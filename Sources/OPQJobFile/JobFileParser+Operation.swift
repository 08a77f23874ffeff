import OPQCore
import Yams

extension JobFileParser {
    static let operationFields = OperationField.keys
    /// The keys that say what an operation does; at most one per operation.
    static let workFields = OperationField.work.map(\.key)

    /// How errors name an operation: `operation 'NAME'`, a long name cut to 80 characters.
    static func subject(named name: String) -> String {
        // At most 80 bytes is at most 80 characters: no counting of characters for most names.
        name.utf8.count <= 80 || name.count <= 80 ? "operation '\(name)'" : "operation '\(name.prefix(79) + "…")'"
    }

    /// Parses one item of `operations` into the spec at `index`, applying the defaults.
    ///
    /// The mapping is read once (``NodeReader/operationEntries(_:_:field:)``); each later check looks
    /// its fields up by position, so an operation costs no dictionary of fields or of lines (issue 19).
    mutating func parseOperation(_ node: Node, index k: Int) throws(JobFileError) {
        var subject: String
        // Name the operation in errors about its other fields, even those written before `name`.
        var isNamed = false
        if case .mapping(let mapping) = node, case .scalar(let name)? = mapping.firstValue(forKey: "name"),
           !name.string.isEmpty {
            subject = Self.subject(named: name.string)
            isNamed = true
        } else {
            subject = "operation #\(k + 1)"
        }
        let fields = try reader.operationEntries(node, subject, field: subject)
        operationLines[k] = reader.line(of: node)
        fieldLines.startRow(k)
        for i in 0..<fields.count {
            let field = fields.field(at: i)
            fieldLines.append(field.key, fields[field].flatMap(reader.line(of:)))
        }

        var spec = OperationSpec(queue: defaults.queue, priority: defaults.priority, qualityOfService: defaults.qualityOfService,
                                 requires: defaults.requires, retries: defaults.retries, timeout: defaults.timeout)
        spec.resources = defaults.resources
        if let name = fields[.name] {
            spec.name = try reader.name(name, subject, field: "name")
            // Named above already when `name` is non-empty text (the same entry: a second `name` is refused).
            if !spec.name.isEmpty && !isNamed { subject = Self.subject(named: spec.name) }
        }

        var firstWork: OperationField?
        for i in 0..<fields.count where OperationField.work.contains(fields.field(at: i)) {
            let second = fields.field(at: i)
            guard let first = firstWork else { firstWork = second; continue }
            let firstLine = reader.line(of: fields.keyNode(first)!).map { " (line \($0))" } ?? ""
            throw reader.error(at: fields.keyNode(second), subject, field: second.key,
                               "'\(first.key)'\(firstLine) and '\(second.key)' are two kinds of work; an operation does one: "
                                   + "command, shell, commands or handler (or nothing)")
        }
        var environment = defaults.environment
        if let node = fields[.env] {
            environment.merge(try reader.stringMap(node, subject, field: "env", isEnvironment: true)) { $1 }
        }
        var workingDirectory = defaults.workingDirectory
        if let node = fields[.cwd] { workingDirectory = try reader.name(node, subject, field: "cwd") }
        let makesProcesses = fields.has(.command) || fields.has(.shell) || fields.has(.commands)
        if !makesProcesses {
            for field in [OperationField.env, .cwd, .inputs, .outputs] where fields.has(field) {
                throw reader.error(at: fields.keyNode(field), subject, field: field.key,
                                   "\(field.key) applies only to command, shell or commands, and this operation runs none")
            }
        }
        if fields.has(.payload) && !fields.has(.handler) {
            throw reader.error(at: fields.keyNode(.payload), subject, field: "payload", "payload needs a handler")
        }

        for i in 0..<fields.count {
            let field = fields.field(at: i)
            let key = field.key
            let value = fields[field]!
            switch field {
            case .command:
                if case .scalar = value {
                    throw reader.error(at: value, subject, field: key,
                                       "command must be a list of arguments (argv), e.g. [gzip, -k, a.txt]; use 'shell' for a shell command line")
                }
                let argv = try reader.stringValues(value, subject, field: key, what: "a list of arguments (argv)")
                spec.work = .command(Command(argv, environment: environment, workingDirectory: workingDirectory))
            case .shell:
                let script = try reader.string(value, subject, field: key)
                spec.work = .command(.shell(script, environment: environment, workingDirectory: workingDirectory))
            case .commands:
                guard case .sequence(let items) = value else {
                    throw reader.error(at: value, subject, field: key,
                                       "commands must be a list of argv lists, not \(NodeReader.describe(value))")
                }
                try reader.count(items.count, at: value, subject, field: key, maximum: Limits.maxCommandsPerOperation)
                var commands: [Command] = []
                for (i, item) in items.enumerated() {
                    fieldLines.append("commands[\(i)]", reader.line(of: item))
                    if case .scalar = item {
                        throw reader.error(at: item, subject, field: "commands[\(i)]",
                                           "commands[\(i)] must be a list of arguments (argv), e.g. [sha256sum, a.gz]")
                    }
                    let argv = try reader.stringValues(item, subject, field: "commands[\(i)]", what: "a list of arguments (argv)")
                    commands.append(Command(argv, environment: environment, workingDirectory: workingDirectory))
                }
                spec.work = .commands(commands)
            case .handler:
                let name = try reader.name(value, subject, field: key)
                let payload = try fields[.payload].map { (node) throws(JobFileError) in
                    try reader.string(node, subject, field: "payload", allowsNUL: true)  // bytes for the handler, never cut
                } ?? ""
                spec.work = .handler(name: name, payload: Array(payload.utf8))
            case .handlers:
                spec.work = .handlers(try handlerCalls(value, subject))
            case .after:
                for (name, node) in try reader.strings(value, subject, field: key, allowSingle: true, maxBytes: Limits.maxNameBytes,
                                                         what: "a list of operation names") {
                    spec.dependencies.append(.name(name))
                    let field = "after:\(name)"
                    if fieldLines.line(k, field) == nil { fieldLines.append(field, reader.line(of: node)) }
                }
            case .requires: spec.requires = try requirement(value, subject)
            case .priority: spec.priority = try priority(value, subject)
            case .qos: spec.qualityOfService = try qualityOfService(value, subject)
            case .retries: spec.retries = try reader.int(value, subject, field: key, in: 0...Limits.maxRetries)
            case .timeout: spec.timeout = try reader.seconds(value, subject, field: key, positive: true)
            case .labels: spec.labels = try reader.stringMap(value, subject, field: key)
            case .cpus: spec.resources.cpus = try reader.int(value, subject, field: key, in: 1...Limits.maxCpus)
            case .memory: spec.resources.memory = try reader.memory(value, subject, field: key)
            case .queue: spec.queue = try reader.name(value, subject, field: key)
            case .barrier: spec.isBarrier = try reader.bool(value, subject, field: key)
            case .inputs, .outputs: break  // below, once the commands are known
            case .name, .payload, .env, .cwd: break  // read above
            }
        }
        if fields.has(.inputs) || fields.has(.outputs) {
            let inputs = try fields[.inputs].map { (node) throws(JobFileError) in
                try reader.stringValues(node, subject, field: "inputs", allowSingle: true, what: "a list of file paths")
            } ?? []
            let outputs = try fields[.outputs].map { (node) throws(JobFileError) in
                try reader.stringValues(node, subject, field: "outputs", allowSingle: true, what: "a list of file paths")
            } ?? []
            spec.work = spec.work.withFiles(inputs: inputs, outputs: outputs)
        }
        operations.append(spec)
    }
}
