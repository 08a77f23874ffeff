import Foundation
import OPQCore

/// A dependency's declared `outputs:` passed to its dependants (docs/job-files.md "Passing a
/// dependency's output files"), resolved once the whole file is read:
///
/// - `{outputs.NAME}` in a dependant's `command`, `shell`, `commands`, `env` values, `inputs`,
///   `outputs`, handler `payload` or `handlers` payloads stands for the outputs of its dependency NAME (named in `after:`;
///   inside a `foreach`, the template name: `{outputs.encode}` is this item's `encode`, or every item's
///   with `after: [encode/*]`). A `command` word that is exactly the placeholder becomes one argument
///   per file; elsewhere the files are joined by spaces, each single-quoted in a `shell` script.
/// - A dependant's commands get `OPQ_OUTPUT_<name>` (the first output) and `OPQ_OUTPUTS_<name>` (all
///   of them, one per line) for each dependency that declares outputs; its own `env` wins.
/// - A dependant that declares `outputs` but no `inputs` takes its dependencies' outputs as inputs,
///   so make's rule reruns it when a dependency made a newer file.
///
/// Paths are as the dependency wrote them, relative to its `cwd`; a relative path is joined to the
/// dependency's `cwd` when the dependant runs elsewhere.
extension JobFileParser {
    /// The marker that starts an output placeholder.
    static let outputsMarker = "{outputs."

    /// Applies the rules above to every operation.
    /// - Throws: ``JobFileError`` naming the file, line, operation and field of a placeholder whose
    ///   name is no dependency, or a dependency without outputs, or a path that cannot be placed.
    mutating func passDependencyOutputs() throws(JobFileError) {
        // Most files name no output placeholder, and most operations declare no outputs: pay one scan.
        var declares = false
        var mentions = false
        for spec in operations {
            if !declares, Self.declaresOutputs(spec) { declares = true }
            if !mentions, Self.mentionsOutputs(spec) { mentions = true }
            if declares && mentions { break }
        }
        guard declares || mentions else { return }
        var indexOfName: [String: Int] = [:]
        for (k, spec) in operations.enumerated() where !spec.name.isEmpty { indexOfName[spec.name] = k }
        for k in operations.indices {
            let dependencies: [Int] = operations[k].dependencies.compactMap { dependency in
                if case .name(let name) = dependency { indexOfName[name] } else { nil }
            }
            guard !dependencies.isEmpty || Self.mentionsOutputs(operations[k]) else { continue }
            try passOutputs(of: dependencies, to: k, indexOfName: indexOfName)
        }
    }

    /// A dependency's outputs as one dependant sees them.
    struct PassedOutputs {
        /// The name its variables and placeholders use: a `foreach` member's template name, else its name.
        var key: String
        /// Its full name (`encode/a.wav` for a `foreach` member).
        var name: String
        /// The paths, or nil when one cannot be placed for the dependant (relative to another directory).
        var paths: [String]?
    }

    /// The outputs of dependency `index` as operation `dependant` sees them; nil when it declares none.
    private func outputs(of index: Int, seenFrom dependant: Int) -> PassedOutputs? {
        let commands = Self.commands(of: operations[index])
        guard let declared = commands.first?.outputs, !declared.isEmpty else { return nil }
        let key = foreachMembers[index]?.name ?? operations[index].name
        let theirs = commands.first?.workingDirectory
        let ours = Self.commands(of: operations[dependant]).first?.workingDirectory
        var paths: [String] = []
        for path in declared {
            if path.hasPrefix("/") || theirs == ours {
                paths.append(path)
            } else if let theirs, theirs.hasPrefix("/") || ours == nil {
                paths.append(theirs.hasSuffix("/") ? theirs + path : theirs + "/" + path)
            } else {
                return PassedOutputs(key: key, name: operations[index].name, paths: nil)
            }
        }
        return PassedOutputs(key: key, name: operations[index].name, paths: paths)
    }

    /// Passes the outputs of `dependencies` (operation indexes, in `after:` order) to operation `k`.
    private mutating func passOutputs(of dependencies: [Int], to k: Int, indexOfName: [String: Int]) throws(JobFileError) {
        var byKey: [PassedOutputs] = []
        var keysWithoutOutputs: Set<String> = []
        for index in dependencies {
            if let entry = outputs(of: index, seenFrom: k) {
                byKey.append(entry)
            } else {
                keysWithoutOutputs.insert(foreachMembers[index]?.name ?? operations[index].name)
                keysWithoutOutputs.insert(operations[index].name)
            }
        }
        let spec = operations[k]
        let subject = spec.name.isEmpty ? "operation #\(k + 1)" : Self.subject(named: spec.name)
        let file = reader.file
        let lines = fieldLines
        let operationLine = operationLines[k]

        /// The paths `{outputs.NAME}` stands for in `field`.
        func paths(_ name: String, field: String) throws(JobFileError) -> [String] {
            func refuse(_ message: String) -> JobFileError {
                let line = lines.line(k, field) ?? lines.line(k, field.hasPrefix("env.") ? "env" : field) ?? operationLine
                return JobFileError(file: file, line: line, subject: subject, field: field, message: message)
            }
            let matching = byKey.filter { $0.key == name || $0.name == name }
            if matching.isEmpty {
                if keysWithoutOutputs.contains(name) {
                    throw refuse("{outputs.\(name)}: '\(name)' declares no outputs; list the files it makes under its 'outputs:'")
                }
                let known = indexOfName[name] != nil || foreachMembers.values.contains { $0.name == name }
                throw refuse("{outputs.\(name)}: '\(name)' is not a dependency of this operation"
                    + (known ? "; add it to 'after:'" : " (no operation of the file has that name)"))
            }
            var all: [String] = []
            for entry in matching {
                guard let paths = entry.paths else {
                    throw refuse("{outputs.\(name)}: '\(name)' writes its outputs relative to the worker's directory and this "
                        + "operation runs in another 'cwd'; give '\(name)' a 'cwd' or absolute output paths")
                }
                all += paths
            }
            return all
        }

        var work = spec.work
        switch work {
        case .empty: break
        case .handlers(let calls):
            var passed: [HandlerCall] = []
            for (i, call) in calls.enumerated() {
                let text = String(decoding: call.payload, as: UTF8.self)
                guard text.contains(Self.outputsMarker) else { passed.append(call); continue }
                passed.append(HandlerCall(call.name, text: try Self.expand(text, shell: false, field: "handlers[\(i)].payload", paths)))
            }
            work = .handlers(passed)
        case .handler(let name, let payload):
            let text = String(decoding: payload, as: UTF8.self)
            if text.contains(Self.outputsMarker) {
                work = .handler(name: name, payload: Array(try Self.expand(text, shell: false, field: "payload", paths).utf8))
            }
        case .command(let command):
            work = .command(try pass(command, field: "command", byKey: byKey, paths))
        case .commands(let commands):
            var passed: [Command] = []
            for (i, command) in commands.enumerated() { passed.append(try pass(command, field: "commands[\(i)]", byKey: byKey, paths)) }
            work = .commands(passed)
        }
        operations[k].work = work
    }

    /// `command` with its placeholders expanded, the output variables added and, without inputs of its
    /// own but with outputs, its dependencies' outputs as inputs.
    private func pass(_ command: Command, field: String, byKey: [PassedOutputs],
                      _ paths: (String, String) throws(JobFileError) -> [String]) throws(JobFileError) -> Command {
        var command = command
        let argv = command.argv
        if argv.count == 3, argv[0] == "/bin/sh", argv[1] == "-c" {
            if argv[2].contains(Self.outputsMarker) {
                command.argv[2] = try Self.expand(argv[2], shell: true, field: field == "command" ? "shell" : field, paths)
            }
        } else if argv.contains(where: { $0.contains(Self.outputsMarker) }) {
            command.argv = try Self.words(argv, field: field, paths)
        }
        for (key, value) in command.environment where value.contains(Self.outputsMarker) {
            command.environment[key] = try Self.expand(value, shell: false, field: "env.\(key)", paths)
        }
        if command.inputs.contains(where: { $0.contains(Self.outputsMarker) }) {
            command.inputs = try Self.words(command.inputs, field: "inputs", paths)
        }
        if command.outputs.contains(where: { $0.contains(Self.outputsMarker) }) {
            command.outputs = try Self.words(command.outputs, field: "outputs", paths)
        }
        var variables: [String: String] = [:]
        var seen: Set<String> = []
        for passed in byKey {
            let key = passed.key
            guard let resolved = passed.paths, !resolved.isEmpty else { continue }
            let single = DependencyVariable.name("OPQ_OUTPUT_", key), all = DependencyVariable.name("OPQ_OUTPUTS_", key)
            if seen.insert(key).inserted {
                variables[single] = resolved[0]
                variables[all] = resolved.joined(separator: "\n")
            } else {
                variables[all, default: ""] += "\n" + resolved.joined(separator: "\n")
            }
        }
        command.environment.merge(variables) { own, _ in own }
        if command.inputs.isEmpty, !command.outputs.isEmpty, !byKey.isEmpty, byKey.allSatisfy({ $0.paths != nil }) {
            command.inputs = byKey.flatMap { $0.paths ?? [] }
        }
        return command
    }

    /// Words of an argv-like list: a word that is exactly `{outputs.NAME}` becomes one word per path.
    private static func words(_ words: [String], field: String, _ paths: (String, String) throws(JobFileError) -> [String])
        throws(JobFileError) -> [String] {
        var result: [String] = []
        for word in words {
            if word.hasPrefix(outputsMarker), word.hasSuffix("}"), !word.dropFirst(outputsMarker.count).dropLast().contains("}") {
                result += try paths(String(word.dropFirst(outputsMarker.count).dropLast()), field)
            } else {
                result.append(try expand(word, shell: false, field: field, paths))
            }
        }
        return result
    }

    /// `text` with every `{outputs.NAME}` replaced by the paths joined by spaces (each single-quoted when `shell`).
    private static func expand(_ text: String, shell: Bool, field: String, _ paths: (String, String) throws(JobFileError) -> [String])
        throws(JobFileError) -> String {
        var result = ""
        var rest = Substring(text)
        while let start = rest.range(of: outputsMarker) {
            guard let close = rest[start.upperBound...].firstIndex(of: "}") else { break }
            result += rest[..<start.lowerBound]
            let found = try paths(String(rest[start.upperBound..<close]), field)
            result += found.map { shell ? MapTemplate.shellQuoted($0) : $0 }.joined(separator: " ")
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }

    /// The commands an operation runs (none for handlers and empty operations).
    static func commands(of spec: OperationSpec) -> [Command] {
        switch spec.work {
        case .command(let command): [command]
        case .commands(let commands): commands
        case .empty, .handler, .handlers: []
        }
    }

    /// Whether any text field of `spec` holds `{outputs.`.
    static func mentionsOutputs(_ spec: OperationSpec) -> Bool {
        func has(_ text: String) -> Bool { text.containsUTF8(UInt8(ascii: "{")) && text.contains(outputsMarker) }
        func has(_ payload: [UInt8]) -> Bool { payload.contains(UInt8(ascii: "{")) && has(String(decoding: payload, as: UTF8.self)) }
        switch spec.work {
        case .empty: return false
        case .handler(_, let payload): return has(payload)
        case .handlers(let calls): return calls.contains { has($0.payload) }
        case .command(let command): return has(command)
        case .commands(let commands): return commands.contains(where: has)
        }
        func has(_ command: Command) -> Bool {
            command.argv.contains(where: has) || command.environment.values.contains(where: has)
                || command.inputs.contains(where: has) || command.outputs.contains(where: has)
        }
    }

    /// Whether `spec` runs a command that declares outputs (no array is made: this runs once per operation).
    static func declaresOutputs(_ spec: OperationSpec) -> Bool {
        switch spec.work {
        case .command(let command): !command.outputs.isEmpty
        case .commands(let commands): commands.contains { !$0.outputs.isEmpty }
        case .empty, .handler, .handlers: false
        }
    }
}
