import Foundation
import OPQCore
import Yams
#if canImport(Glibc)
import Glibc
#endif

/// A `foreach` group of a job file: its items and the operations it makes once per item.
///
/// ```yaml
/// - foreach: {glob: "wav/*.wav"}     # or {lines: FILE}, {range: 1..10}, or a list [a, b, c]
///   operations:
///     - name: encode
///       command: [flac, -o, "flac/{/.}.flac", "{}"]
///     - name: draw
///       after: [encode]              # this item's encode
/// - name: index
///   after: [draw/*]                  # every item's draw
/// ```
///
/// Every text field of a group's operation is a template with `opq map`'s placeholders (``MapTemplate``,
/// ``Placeholder``), expanded once per item; `{#}` is the item's number from 1. Operation NAME becomes
/// `NAME/ITEM` (ITEM: the item's arguments joined by spaces). Inside the group `after: [NAME]` names
/// this item's NAME; anywhere `after: [NAME/*]` names every item's.
struct ForeachGroup {
    /// The items, each one argument (a list item that is itself a list gives several: `{1}`, `{2}`).
    var items: [[String]]
    /// Line of the `foreach` key (for errors).
    var line: Int?
    /// The names of the group's operations as written (without `/ITEM`).
    var names: Set<String>

    static let fields = ["foreach", "operations"]
    static let sourceKinds = ["glob", "list", "lines", "range"]

    /// The items `node` (the value of `foreach:`) stands for.
    static func items(_ node: Node, reader: NodeReader) throws(JobFileError) -> [[String]] {
        let subject = "foreach"
        if case .sequence = node { return try list(node, reader: reader) }
        let fields = try reader.fields(node, subject, field: "foreach", allowed: sourceKinds,
                                       what: "a list or a mapping with one of glob, list, lines, range")
        guard fields.entries.count == 1, let (kind, _, value) = fields.entries.first else {
            throw reader.error(at: node, subject, field: "foreach", "foreach needs exactly one of glob, list, lines, range")
        }
        let items: [[String]]
        switch kind {
        case "glob":
            let pattern = try reader.string(value, subject, field: kind)
            items = try glob(pattern).map { [$0] }
            if items.isEmpty {
                throw reader.error(at: value, subject, field: kind,
                                   "glob '\(pattern)' matches no file (relative to \(FileManager.default.currentDirectoryPath))")
            }
        case "list":
            items = try list(value, reader: reader)
        case "lines":
            let path = try reader.string(value, subject, field: kind)
            // A regular file only: a device or FIFO (/dev/zero, /dev/stdin) could be read without end.
            let type = (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType
            guard type == .typeRegular, let data = FileManager.default.contents(atPath: path) else {
                throw reader.error(at: value, subject, field: kind, "cannot read '\(path)' as a regular file (relative to \(FileManager.default.currentDirectoryPath))")
            }
            do {
                items = try MapInput.items(data, separator: UInt8(ascii: "\n"), source: path).map { [$0] }
            } catch {
                throw reader.error(at: value, subject, field: kind, "\(error)")
            }
        default:
            let written = try reader.string(value, subject, field: kind)
            let bounds = written.split(separator: "..", omittingEmptySubsequences: false).map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard bounds.count == 2, let low = bounds[0], let high = bounds[1], low <= high else {
                throw reader.error(at: value, subject, field: kind,
                                   "range must be FIRST..LAST with integers, FIRST ≤ LAST (e.g. 1..10), not '\(written)'")
            }
            let (span, overflow) = high.subtractingReportingOverflow(low)
            guard !overflow, span < Limits.maxOperationsPerSubmission else {
                throw reader.error(at: value, subject, field: kind,
                                   "range \(written) makes more than \(Limits.maxOperationsPerSubmission) items (split the job)")
            }
            items = (low...high).map { [String($0)] }
        }
        return items
    }

    /// `[a, b]` → one argument each; `[[a, 1], [b, 2]]` → several.
    private static func list(_ node: Node, reader: NodeReader) throws(JobFileError) -> [[String]] {
        guard case .sequence(let sequence) = node else {
            throw reader.error(at: node, "foreach", field: "list", "list must be a list, not \(NodeReader.describe(node))")
        }
        var items: [[String]] = []
        for item in sequence {
            if case .sequence = item {
                items.append(try reader.strings(item, "foreach", field: "list").map(\.value))
            } else {
                items.append([try reader.string(item, "foreach", field: "list")])
            }
        }
        return items
    }

    /// The paths matching `pattern`, sorted (POSIX `glob`).
    private static func glob(_ pattern: String) throws(JobFileError) -> [String] {
        var result = glob_t()
        defer { globfree(&result) }
        guard Glibc.glob(pattern, 0, nil, &result) == 0 else { return [] }
        return (0..<Int(result.gl_pathc)).compactMap { result.gl_pathv[$0].map { String(cString: $0) } }
    }

    /// `spec` (parsed from the group's template) for item `arguments`, number `sequence` (from 1).
    /// - Throws: a message for a placeholder the item cannot fill (the caller adds file, line and item).
    static func expand(_ spec: OperationSpec, _ arguments: [String], sequence: Int) throws(TemplateProblem) -> OperationSpec {
        var spec = spec
        spec.name = itemName(spec.name, arguments)
        switch spec.work {
        case .empty: break
        case .command(let command): spec.work = .command(try expand(command, arguments, sequence))
        case .commands(let commands):
            var expanded: [Command] = []
            for command in commands { expanded.append(try expand(command, arguments, sequence)) }
            spec.work = .commands(expanded)
        case .handler(let name, let payload):
            let text = try expand(String(decoding: payload, as: UTF8.self), arguments, sequence, field: "payload")
            spec.work = .handler(name: try expand(name, arguments, sequence, field: "handler"), payload: Array(text.utf8))
        case .handlers(let calls):
            var expanded: [HandlerCall] = []
            for call in calls {
                let text = try expand(String(decoding: call.payload, as: UTF8.self), arguments, sequence, field: "payload")
                expanded.append(HandlerCall(try expand(call.name, arguments, sequence, field: "handlers"), text: text))
            }
            spec.work = .handlers(expanded)
        }
        var dependencies: [DependencyReference] = []
        for dependency in spec.dependencies {
            guard case .name(let name) = dependency else { dependencies.append(dependency); continue }
            dependencies.append(.name(try expand(name, arguments, sequence, field: "after")))
        }
        spec.dependencies = dependencies
        return spec
    }

    /// `NAME/ITEM`, cut as `opq map` cuts its names if it would be too long.
    static func itemName(_ name: String, _ arguments: [String]) -> String {
        MapTemplate.name(for: ["\(name)/" + arguments.joined(separator: " ")])
    }

    /// A command's argv (a `/bin/sh -c SCRIPT` as a script whose values are quoted), environment and directory.
    private static func expand(_ command: Command, _ arguments: [String], _ sequence: Int) throws(TemplateProblem) -> Command {
        var command = command
        let argv = command.argv
        if argv.count == 3, argv[0] == "/bin/sh", argv[1] == "-c" {
            command.argv[2] = try words([argv[2]], arguments, sequence, shell: true, field: "shell").last ?? ""
        } else {
            command.argv = try words(argv, arguments, sequence, shell: false, field: "command")
        }
        for (key, value) in command.environment {
            command.environment[key] = try expand(value, arguments, sequence, field: "env.\(key)")
        }
        if let directory = command.workingDirectory { command.workingDirectory = try expand(directory, arguments, sequence, field: "cwd") }
        command.inputs = try words(command.inputs, arguments, sequence, shell: false, field: "inputs")
        command.outputs = try words(command.outputs, arguments, sequence, shell: false, field: "outputs")
        return command
    }

    /// One text field, its values joined by spaces where a placeholder stands for several.
    static func expand(_ text: String, _ arguments: [String], _ sequence: Int, field: String) throws(TemplateProblem) -> String {
        try words([text], arguments, sequence, shell: false, field: field).joined(separator: " ")
    }

    /// Template words expanded as `opq map` expands them (one implementation: ``MapTemplate``).
    private static func words(_ words: [String], _ arguments: [String], _ sequence: Int, shell: Bool, field: String)
        throws(TemplateProblem) -> [String]
    {
        guard words.contains(where: { $0.contains("{") }) else { return words }
        for word in words {
            for case .placeholder(let placeholder) in Placeholder.pieces(of: word) {
                switch placeholder {
                case .slot:
                    throw TemplateProblem(field: field, message: "{%} (the job slot) is only known to opq map; job files cannot use it")
                case .argument(let n, _) where abs(n) > arguments.count:
                    throw TemplateProblem(field: field, message: "{\(n)} stands for argument \(n), but the item has \(arguments.count)")
                default: break
                }
            }
        }
        guard let template = try? MapTemplate(words, shell: shell, appendsArguments: false) else { return words }
        let command = template.command(for: arguments, sequence: sequence)
        return shell ? [command.argv.last ?? ""] : command.argv
    }

    /// A template a group's item cannot fill: which field, and why.
    struct TemplateProblem: Error {
        var field: String
        var message: String
    }
}

extension JobFileParser {
    /// Parses a `foreach` group: its template operations once, then one copy per item.
    mutating func parseForeach(_ node: Node) throws(JobFileError) {
        let fields = try reader.fields(node, "foreach", field: "foreach", allowed: ForeachGroup.fields)
        let items = try ForeachGroup.items(fields["foreach"]!, reader: reader)
        guard let list = fields["operations"], case .sequence(let sequence) = list, !sequence.isEmpty else {
            throw reader.error(at: fields["operations"] ?? fields.keyNode("foreach"), "foreach", field: "operations",
                               "a foreach needs an 'operations' list: the operations to run for each item")
        }
        let first = operations.count
        for item in sequence {
            if case .mapping(let mapping) = item, mapping.contains(where: { $0.key.string == "foreach" }) {
                throw reader.error(at: item, "foreach", field: "foreach", "a foreach cannot hold another foreach")
            }
            try parseOperation(item, index: operations.count)
        }
        let templates = Array(operations[first...])
        let templateLines = (first..<operations.count).map { (operationLines[$0], fieldLines[$0] ?? [:]) }
        operations.removeLast(templates.count)
        for k in first..<(first + templates.count) { operationLines[k] = nil; fieldLines[k] = nil }
        if let unnamed = templates.indices.first(where: { templates[$0].name.isEmpty }) {
            throw JobFileError(file: reader.file, line: templateLines[unnamed].0, subject: "operation #\(first + unnamed + 1)",
                               field: "name", message: "an operation in a foreach needs a name (it becomes NAME/ITEM)")
        }
        if items.count * templates.count + operations.count > Limits.maxOperationsPerSubmission {
            throw reader.error(at: fields.keyNode("foreach"), "foreach", field: "foreach",
                               "\(items.count) items × \(templates.count) operations make more than \(Limits.maxOperationsPerSubmission) operations (split the job)")
        }
        let group = ForeachGroup(items: items, line: reader.line(of: fields.keyNode("foreach")!), names: Set(templates.map(\.name)))
        let groupIndex = foreachGroups.count
        foreachGroups.append(group)
        for (i, arguments) in items.enumerated() {
            for (t, template) in templates.enumerated() {
                let index = operations.count
                var spec: OperationSpec
                do {
                    spec = try ForeachGroup.expand(template, arguments, sequence: i + 1)
                } catch {
                    let (line, lines) = templateLines[t]
                    throw JobFileError(file: reader.file, line: lines[error.field.hasPrefix("env.") ? "env" : error.field] ?? line,
                                       subject: Self.subject(named: template.name), field: error.field,
                                       message: "item '\(MapTemplate.name(for: arguments))' (#\(i + 1)): \(error.message)")
                }
                var lines = templateLines[t].1
                spec.dependencies = spec.dependencies.map { dependency in
                    guard case .name(let name) = dependency, group.names.contains(name) else { return dependency }
                    let bound = ForeachGroup.itemName(name, arguments)
                    lines["after:\(bound)"] = lines["after:\(name)"]
                    return .name(bound)
                }
                operations.append(spec)
                operationLines[index] = templateLines[t].0
                fieldLines[index] = lines
                foreachMembers[index] = (groupIndex, template.name)
            }
        }
    }

    /// Resolves `after: [NAME/*]` (every item's NAME) and refuses `after: [NAME]` outside NAME's group.
    mutating func resolveForeachDependencies() throws(JobFileError) {
        var instances: [String: [String]] = [:]
        var groupOf: [String: Int] = [:]
        var plainNames: Set<String> = []
        if !foreachMembers.isEmpty {
            for index in operations.indices {
                guard let (group, name) = foreachMembers[index] else { plainNames.insert(operations[index].name); continue }
                instances[name, default: []].append(operations[index].name)
                groupOf[name] = group
            }
        }
        for index in operations.indices {
            // Most operations name neither `NAME/*` nor a foreach template: nothing to rewrite.
            let needsResolving = operations[index].dependencies.contains { dependency in
                guard case .name(let name) = dependency else { return false }
                return name.hasSuffix("/*") || groupOf[name] != nil
            }
            guard needsResolving else { continue }
            var resolved: [DependencyReference] = []
            for dependency in operations[index].dependencies {
                guard case .name(let name) = dependency else { resolved.append(dependency); continue }
                let line = fieldLines.line(index, "after:\(name)") ?? fieldLines.line(index, "after") ?? operationLines[index]
                if name.hasSuffix("/*") {
                    let base = String(name.dropLast(2))
                    guard let all = instances[base] else {
                        throw JobFileError(file: reader.file, line: line, subject: Self.subject(named: operations[index].name), field: "after",
                                           message: "'\(name)' waits for every item of a foreach operation, and '\(base)' is none")
                    }
                    for target in all {
                        resolved.append(.name(target))
                        if fieldLines.line(index, "after:\(target)") == nil { fieldLines[index, default: [:]]["after:\(target)"] = line }
                    }
                } else if let group = groupOf[name], !plainNames.contains(name) {
                    let where_ = foreachGroups[group].line.map { " at line \($0)" } ?? ""
                    throw JobFileError(file: reader.file, line: line, subject: Self.subject(named: operations[index].name), field: "after",
                                       message: "'\(name)' runs once per item of the foreach\(where_); "
                                           + "write '\(name)/*' to wait for all of them, or put this operation in that foreach")
                } else {
                    resolved.append(dependency)
                }
            }
            operations[index].dependencies = resolved
        }
    }
}
