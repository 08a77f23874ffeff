import OPQCore
import Yams

/// Settings that apply to every operation of a file unless the operation sets its own (`defaults:`).
struct OperationDefaults {
    var priority: QueuePriority = .normal
    var requires: Requirement = .any
    var retries = 0
    var timeout: Double?
    var environment: [String: String] = [:]
    var workingDirectory: String?
    var qualityOfService: QualityOfService = .default
    /// `cpus:` and `memory:` (README "Resources").
    var resources: Resources = .default
    /// The queue of operations that name none (top-level `queue:`).
    var queue = "default"
}

/// Turns a composed document into a ``Submission``, recording where each operation and field is.
struct JobFileParser {
    static let topLevelFields = ["queue", "queues", "defaults", "operations", "after_jobs"]
    static let queueFields = ["maxConcurrent", "suspended"]
    static let defaultFields = ["priority", "requires", "retries", "timeout", "env", "cwd", "qos", "cpus", "memory"]

    var reader: NodeReader
    var defaults = OperationDefaults()
    var operations: [OperationSpec] = []
    var operationLines: [Int: Int] = [:]
    /// Per operation index: field (`name`, `timeout`, `after:NAME`, `commands[1]`) → line.
    var fieldLines = FieldLines()
    var queueLines: [String: Int] = [:]
    var queueSettings: [(queue: String, settings: QueueSettings)] = []
    /// The file's `foreach` groups, and which group and template name each operation made by one has.
    var foreachGroups: [ForeachGroup] = []
    var foreachMembers: [Int: (group: Int, name: String)] = [:]
    /// `after_jobs:`: jobs every operation waits for (see ``JobFile/waiting(forJobs:operations:)``).
    var afterJobs: [JobID] = []

    init(file: String) { reader = NodeReader(file: file) }

    /// Parses the whole document.
    mutating func parse(_ root: Node?) throws(JobFileError) {
        let list = try parseTopLevel(root)
        try parseItems(try operationItems(list))
        try resolveForeachDependencies()
    }

    /// Reads everything but the items of `operations` (`queue`, `defaults`, `queues`, `after_jobs`) and
    /// returns the `operations` node.
    mutating func parseTopLevel(_ root: Node?) throws(JobFileError) -> Node {
        guard let root else {
            throw JobFileError(file: reader.file, line: 1, message: "the file is empty; a job file needs an 'operations' list")
        }
        let top = try reader.fields(root, nil, field: nil, allowed: Self.topLevelFields, what: "a mapping with an 'operations' list")
        if let node = top["queue"] {
            defaults.queue = try reader.name(node, nil, field: "queue")
        }
        if let node = top["defaults"] { try parseDefaults(node) }
        if let node = top["queues"] { try parseQueues(node) }
        if let node = top["after_jobs"] {
            for (written, item) in try reader.strings(node, nil, field: "after_jobs", allowSingle: true, what: "a list of job ids (job-12)") {
                guard let id = UInt64(written.hasPrefix("job-") ? String(written.dropFirst(4)) : written), id > 0 else {
                    throw reader.error(at: item, nil, field: "after_jobs", "after_jobs lists job ids like job-12, not '\(written)'")
                }
                afterJobs.append(JobID(id))
            }
        }
        guard let list = top["operations"] else {
            throw reader.error(at: root, nil, field: "operations", "no 'operations' list; a job file needs at least one operation")
        }
        return list
    }

    /// The items of the `operations` list, refused when it is no list, empty or too long. `count`: how
    /// many items the list holds when they are read elsewhere (``JSONOperationSlices``).
    func operationItems(_ list: Node, count: Int? = nil) throws(JobFileError) -> Node.Sequence {
        guard case .sequence(let sequence) = list else {
            throw reader.error(at: list, nil, field: "operations", "operations must be a list, not \(NodeReader.describe(list))")
        }
        let count = count ?? sequence.count
        try reader.count(count, at: list, nil, field: "operations", maximum: Limits.maxOperationsPerSubmission)
        guard count > 0 else {
            throw reader.error(at: list, nil, field: "operations", "the operations list is empty; a job needs at least one operation")
        }
        return sequence
    }

    /// Parses items of the `operations` list, in file order.
    mutating func parseItems(_ items: Node.Sequence) throws(JobFileError) {
        for item in items {
            if case .mapping(let mapping) = item, mapping.firstValue(forKey: "foreach") != nil {
                try parseForeach(item)
            } else {
                try parseOperation(item, index: operations.count)
            }
        }
    }

    private mutating func parseDefaults(_ node: Node) throws(JobFileError) {
        let subject = "defaults"
        let fields = try reader.fields(node, subject, field: "defaults", allowed: Self.defaultFields)
        for (key, _, value) in fields.entries {
            switch key {
            case "priority": defaults.priority = try priority(value, subject)
            case "requires": defaults.requires = try requirement(value, subject)
            case "retries": defaults.retries = try reader.int(value, subject, field: key, in: 0...Limits.maxRetries)
            case "timeout": defaults.timeout = try reader.seconds(value, subject, field: key, positive: true)
            case "env": defaults.environment = try reader.stringMap(value, subject, field: key, isEnvironment: true)
            case "cwd": defaults.workingDirectory = try reader.name(value, subject, field: key)
            case "qos": defaults.qualityOfService = try qualityOfService(value, subject)
            case "cpus": defaults.resources.cpus = try reader.int(value, subject, field: key, in: 1...Limits.maxCpus)
            case "memory": defaults.resources.memory = try reader.memory(value, subject, field: key)
            default: break
            }
        }
    }

    private mutating func parseQueues(_ node: Node) throws(JobFileError) {
        let queues = try reader.fields(node, nil, field: "queues", allowed: nil, what: "a mapping of queue names to settings")
        for (name, keyNode, value) in queues.entries {
            let subject = "queue '\(name)'"
            let fields = try reader.fields(value, subject, field: "queue '\(name)'", allowed: Self.queueFields)
            var settings = QueueSettings()
            if let node = fields["maxConcurrent"] {
                settings.maxConcurrent = try reader.int(node, subject, field: "maxConcurrent", in: -1...Limits.maxConcurrent)
            }
            if let node = fields["suspended"] { settings.isSuspended = try reader.bool(node, subject, field: "suspended") }
            queueLines[name] = reader.line(of: fields["maxConcurrent"] ?? keyNode)
            queueSettings.append((name, settings))
        }
    }

    // MARK: Shared field parsers

    func priority(_ node: Node, _ subject: String?) throws(JobFileError) -> QueuePriority {
        let levels = QueuePriority.allCases.reversed().map(\.description)
        if case .scalar(let scalar) = node, let priority = QueuePriority(parsing: scalar.string) { return priority }
        let written = (try? reader.string(node, subject, field: "priority")) ?? NodeReader.describe(node)
        if Double(written) != nil || written.lowercased().hasSuffix("inf") || written.lowercased() == ".nan" {
            throw reader.error(at: node, subject, field: "priority",
                               "priority must be a level name or an integer from \(Int.min) to \(Int.max) (it snaps toward normal), not \(written)")
        }
        let hint = Suggestion.closest(to: written, among: levels).map { "did you mean '\($0)'? " } ?? ""
        throw reader.error(at: node, subject, field: "priority",
                           "unknown priority '\(written)' (\(hint)use \(levels.joined(separator: ", ")) or an integer)")
    }

    func qualityOfService(_ node: Node, _ subject: String?) throws(JobFileError) -> QualityOfService {
        let names = QualityOfService.allCases.reversed().map(\.description)
        let written = try reader.string(node, subject, field: "qos")
        if let qos = QualityOfService(parsing: written) { return qos }
        let hint = Suggestion.closest(to: written, among: names).map { "did you mean '\($0)'? " } ?? ""
        throw reader.error(at: node, subject, field: "qos", "unknown qos '\(written)' (\(hint)use \(names.joined(separator: ", ")))")
    }

    func requirement(_ node: Node, _ subject: String?) throws(JobFileError) -> Requirement {
        switch try reader.string(node, subject, field: "requires") {
        case "any": return .any
        case "success": return .success
        case let written:
            throw reader.error(at: node, subject, field: "requires", "requires must be 'any' or 'success', not '\(written)'")
        }
    }
}
