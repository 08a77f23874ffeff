import OPQCore
import Yams

extension JobFileParser {
    static let operationFields = [
        "name", "command", "shell", "commands", "handler", "payload", "handlers", "after", "requires", "priority", "qos",
        "retries", "timeout", "env", "cwd", "labels", "queue", "barrier", "inputs", "outputs", "cpus", "memory",
    ]
    /// The keys that say what an operation does; at most one per operation.
    static let workFields = ["command", "shell", "commands", "handler", "handlers"]

    /// How errors name an operation: `operation 'NAME'`, a long name cut to 80 characters.
    static func subject(named name: String) -> String {
        "operation '\(name.count > 80 ? name.prefix(79) + "…" : name)'"
    }

    /// Parses one item of `operations` into the spec at `index`, applying the defaults.
    mutating func parseOperation(_ node: Node, index k: Int) throws(JobFileError) {
        var subject = "operation #\(k + 1)"
        // Name the operation in errors about its other fields, even those written before `name`.
        if case .mapping(let mapping) = node, case .scalar(let name)? = mapping.first(where: { $0.key.string == "name" })?.value,
           !name.string.isEmpty {
            subject = Self.subject(named: name.string)
        }
        let fields = try reader.fields(node, subject, field: subject, allowed: Self.operationFields)
        operationLines[k] = reader.line(of: node)
        var lines: [String: Int] = [:]
        for entry in fields.entries { lines[entry.key] = reader.line(of: entry.value) }

        var spec = OperationSpec(queue: defaults.queue, priority: defaults.priority, qualityOfService: defaults.qualityOfService,
                                 requires: defaults.requires, retries: defaults.retries, timeout: defaults.timeout)
        spec.resources = defaults.resources
        if let name = fields["name"] {
            spec.name = try reader.name(name, subject, field: "name")
            if !spec.name.isEmpty { subject = Self.subject(named: spec.name) }
        }

        let kinds = fields.entries.filter { Self.workFields.contains($0.key) }
        if kinds.count > 1 {
            let first = kinds[0], second = kinds[1]
            let firstLine = reader.line(of: first.keyNode).map { " (line \($0))" } ?? ""
            throw reader.error(at: second.keyNode, subject, field: second.key,
                               "'\(first.key)'\(firstLine) and '\(second.key)' are two kinds of work; an operation does one: "
                                   + "command, shell, commands or handler (or nothing)")
        }
        var environment = defaults.environment
        if let node = fields["env"] {
            environment.merge(try reader.stringMap(node, subject, field: "env", isEnvironment: true)) { $1 }
        }
        var workingDirectory = defaults.workingDirectory
        if let node = fields["cwd"] { workingDirectory = try reader.name(node, subject, field: "cwd") }
        let makesProcesses = fields["command"] != nil || fields["shell"] != nil || fields["commands"] != nil
        for key in ["env", "cwd", "inputs", "outputs"] where fields[key] != nil && !makesProcesses {
            throw reader.error(at: fields.keyNode(key), subject, field: key,
                               "\(key) applies only to command, shell or commands, and this operation runs none")
        }
        if fields["payload"] != nil && fields["handler"] == nil {
            throw reader.error(at: fields.keyNode("payload"), subject, field: "payload", "payload needs a handler")
        }

        for (key, keyNode, value) in fields.entries {
            switch key {
            case "command":
                if case .scalar = value {
                    throw reader.error(at: value, subject, field: key,
                                       "command must be a list of arguments (argv), e.g. [gzip, -k, a.txt]; use 'shell' for a shell command line")
                }
                let argv = try reader.strings(value, subject, field: key, what: "a list of arguments (argv)").map(\.value)
                spec.work = .command(Command(argv, environment: environment, workingDirectory: workingDirectory))
            case "shell":
                let script = try reader.string(value, subject, field: key)
                spec.work = .command(.shell(script, environment: environment, workingDirectory: workingDirectory))
            case "commands":
                guard case .sequence(let items) = value else {
                    throw reader.error(at: value, subject, field: key,
                                       "commands must be a list of argv lists, not \(NodeReader.describe(value))")
                }
                try reader.count(items.count, at: value, subject, field: key, maximum: Limits.maxCommandsPerOperation)
                var commands: [Command] = []
                for (i, item) in items.enumerated() {
                    lines["commands[\(i)]"] = reader.line(of: item)
                    if case .scalar = item {
                        throw reader.error(at: item, subject, field: "commands[\(i)]",
                                           "commands[\(i)] must be a list of arguments (argv), e.g. [sha256sum, a.gz]")
                    }
                    let argv = try reader.strings(item, subject, field: "commands[\(i)]", what: "a list of arguments (argv)").map(\.value)
                    commands.append(Command(argv, environment: environment, workingDirectory: workingDirectory))
                }
                spec.work = .commands(commands)
            case "handler":
                let name = try reader.name(value, subject, field: key)
                let payload = try fields["payload"].map { (node) throws(JobFileError) in
                    try reader.string(node, subject, field: "payload", allowsNUL: true)  // bytes for the handler, never cut
                } ?? ""
                spec.work = .handler(name: name, payload: Array(payload.utf8))
            case "handlers":
                spec.work = .handlers(try handlerCalls(value, subject, lines: &lines))
            case "after":
                for (name, node) in try reader.strings(value, subject, field: key, allowSingle: true, maxBytes: Limits.maxNameBytes,
                                                         what: "a list of operation names") {
                    spec.dependencies.append(.name(name))
                    if lines["after:\(name)"] == nil { lines["after:\(name)"] = reader.line(of: node) }
                }
            case "requires": spec.requires = try requirement(value, subject)
            case "priority": spec.priority = try priority(value, subject)
            case "qos": spec.qualityOfService = try qualityOfService(value, subject)
            case "retries": spec.retries = try reader.int(value, subject, field: key, in: 0...Limits.maxRetries)
            case "timeout": spec.timeout = try reader.seconds(value, subject, field: key, positive: true)
            case "labels": spec.labels = try reader.stringMap(value, subject, field: key)
            case "cpus": spec.resources.cpus = try reader.int(value, subject, field: key, in: 1...Limits.maxCpus)
            case "memory": spec.resources.memory = try reader.memory(value, subject, field: key)
            case "queue": spec.queue = try reader.name(value, subject, field: key)
            case "barrier": spec.isBarrier = try reader.bool(value, subject, field: key)
            case "inputs", "outputs": break  // below, once the commands are known
            default: _ = keyNode  // name, payload, env, cwd: read above
            }
        }
        if fields["inputs"] != nil || fields["outputs"] != nil {
            let inputs = try fields["inputs"].map { (node) throws(JobFileError) in
                try reader.strings(node, subject, field: "inputs", allowSingle: true, what: "a list of file paths").map(\.value)
            } ?? []
            let outputs = try fields["outputs"].map { (node) throws(JobFileError) in
                try reader.strings(node, subject, field: "outputs", allowSingle: true, what: "a list of file paths").map(\.value)
            } ?? []
            spec.work = spec.work.withFiles(inputs: inputs, outputs: outputs)
        }
        fieldLines[k] = lines
        operations.append(spec)
    }
}
