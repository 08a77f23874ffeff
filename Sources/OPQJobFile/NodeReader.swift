import OPQCore
import Yams

/// Typed, located access to a composed YAML/JSON tree: every wrong type, unknown key or duplicate key
/// becomes a ``JobFileError`` naming the file, the line, the subject and the field.
struct NodeReader {
    /// The file name used in errors.
    let file: String
    /// Lines in the file before the text that was composed: 0 for a whole document, more for a slice of
    /// a big JSON file's operations (``JSONOperationSlices``).
    var lineOffset = 0

    init(file: String) { self.file = file }

    /// 1-based line in the file where `node` starts (nil if Yams kept no mark).
    func line(of node: Node) -> Int? {
        let mark: Mark? = switch node {
        case .scalar(let scalar): scalar.mark
        case .mapping(let mapping): mapping.mark
        case .sequence(let sequence): sequence.mark
        @unknown default: nil
        }
        return mark.map { $0.line + lineOffset }
    }

    /// An error located at `node`.
    func error(at node: Node?, _ subject: String?, field: String?, _ message: String) -> JobFileError {
        JobFileError(file: file, line: node.flatMap(line(of:)), subject: subject, field: field, message: message)
    }

    /// A short description of what `node` holds, for "must be X, not Y" messages.
    static func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .scalar(let scalar):
            if isPlain(scalar) {
                if node.null != nil { return "null" }
                if node.bool != nil { return scalar.string }
                if node.int != nil || node.float != nil { return "the number \(scalar.string)" }
            }
            return "the text '\(scalar.string)'"
        @unknown default: return "an unexpected node"
        }
    }

    private static func isPlain(_ scalar: Node.Scalar) -> Bool { scalar.style == .plain || scalar.style == .any }

    /// A plain (unquoted) scalar, if `node` is one.
    private static func plainScalar(_ node: Node) -> Node.Scalar? {
        guard case .scalar(let scalar) = node, isPlain(scalar) else { return nil }
        return scalar
    }

    // MARK: Tags

    /// The tags a job file may write explicitly (`!!str 007`): YAML's core schema. Anything else —
    /// `!!python/object:os.system`, `!foo`, `!!binary` — means the file expects a loader that
    /// builds something, and is refused rather than silently read as plain text.
    static let coreTags: Set<String> = [
        "", "!", "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map",
    ]

    /// Refuses the first node (in file order) with a tag outside ``coreTags``, and a tree whose aliases
    /// (`*name`) expand to more than `maxNodes` nodes (a "billion laughs": a few lines of anchors that
    /// would make the parser build millions of arguments).
    /// - Complexity: O(min(nodes, maxNodes)); iterative, so any depth is safe.
    func checkTags(_ root: Node, maxNodes: Int) throws(JobFileError) {
        var pending = [root]
        var visited = 0
        while let node = pending.popLast() {
            visited += 1
            if visited > maxNodes {
                throw error(at: node, nil, field: nil,
                            "aliases (*name) expand this file to more than \(maxNodes) values; write the values out or use fewer aliases")
            }
            let tag: String
            switch node {
            case .scalar(let scalar): tag = scalar.tag.description
            case .mapping(let mapping):
                tag = mapping.tag.description
                for (key, value) in mapping.reversed() { pending += [value, key] }
            case .sequence(let sequence):
                tag = sequence.tag.description
                pending += sequence.reversed()
            @unknown default: tag = ""
            }
            if !Self.coreTags.contains(tag) {
                let written = tag.hasPrefix("tag:yaml.org,2002:") ? "!!" + tag.dropFirst("tag:yaml.org,2002:".count) : tag
                throw error(at: node, nil, field: nil,
                            "unknown tag '\(written)'; a job file holds only text, numbers, booleans, lists and mappings "
                                + "(remove the tag, or quote the value if it is text)")
            }
        }
    }

    // MARK: Mappings

    /// The entries of a mapping, in file order, with duplicate and unknown keys refused.
    struct Fields {
        /// Key, the key's node (for its line) and the value.
        var entries: [(key: String, keyNode: Node, value: Node)]

        /// The value of `key`, if present.
        subscript(key: String) -> Node? { entries.first { $0.key == key }?.value }

        /// The node of `key` itself (its line), if present.
        func keyNode(_ key: String) -> Node? { entries.first { $0.key == key }?.keyNode }
    }

    /// Reads `node` as a mapping whose keys must be among `allowed` (nil = any key).
    func fields(_ node: Node, _ subject: String?, field: String?, allowed: [String]?, what: String = "a mapping") throws(JobFileError) -> Fields {
        guard case .mapping(let mapping) = node else {
            throw error(at: node, subject, field: field, "\(field ?? "this") must be \(what), not \(Self.describe(node))")
        }
        var fields = Fields(entries: [])
        var seen: [String: Node] = [:]
        for (keyNode, value) in mapping {
            let name = try key(keyNode, subject, field: field)
            if let first = seen[name] { throw duplicate(name, at: keyNode, first: first, subject) }
            if let allowed, !allowed.contains(name) { throw unknown(name, at: keyNode, allowed: allowed, subject) }
            seen[name] = keyNode
            fields.entries.append((name, keyNode, value))
        }
        return fields
    }

    /// Reads `node` as an operation's mapping (``fields(_:_:field:allowed:what:)`` with the operation
    /// fields allowed, same errors) in one pass, into positions rather than a list and a dictionary.
    func operationEntries(_ node: Node, _ subject: String?, field: String?) throws(JobFileError) -> OperationEntries {
        guard case .mapping(let mapping) = node else {
            throw error(at: node, subject, field: field, "\(field ?? "this") must be a mapping, not \(Self.describe(node))")
        }
        var entries = OperationEntries(mapping)
        for position in 0..<mapping.count {
            let keyNode = mapping[mapping.startIndex + position].key
            let name = try key(keyNode, subject, field: field)
            let known = OperationField.byKey[name]
            if let known, let first = entries.keyNode(known) { throw duplicate(name, at: keyNode, first: first, subject) }
            guard let known else { throw unknown(name, at: keyNode, allowed: OperationField.keys, subject) }
            entries.add(known, at: position)
        }
        return entries
    }

    /// The text of a mapping's key, refused when it is no text, holds a NUL or is too long.
    private func key(_ keyNode: Node, _ subject: String?, field: String?) throws(JobFileError) -> String {
        guard case .scalar(let key) = keyNode else {
            throw error(at: keyNode, subject, field: field, "keys must be text, not \(Self.describe(keyNode))")
        }
        try checkText(key.string, at: keyNode, subject, field: "key", maxBytes: Limits.maxNameBytes)
        return key.string
    }

    /// A key written a second time, at `keyNode` (`first`: where it was first).
    private func duplicate(_ name: String, at keyNode: Node, first: Node, _ subject: String?) -> JobFileError {
        let firstLine = line(of: first).map { " (first on line \($0))" } ?? ""
        return error(at: keyNode, subject, field: name, "'\(name)' appears twice\(firstLine)")
    }

    /// A key outside `allowed`, with the closest allowed one as a hint.
    private func unknown(_ name: String, at keyNode: Node, allowed: [String], _ subject: String?) -> JobFileError {
        let hint = Suggestion.closest(to: name, among: allowed).map { "did you mean '\($0)'?" }
            ?? "expected one of: " + allowed.joined(separator: ", ")
        return error(at: keyNode, subject, field: name, "unknown field '\(name)' (\(hint))")
    }

    // MARK: Scalars

    /// Text: any scalar but null (numbers and booleans are taken as written: `sleep 1` → "1").
    ///
    /// A NUL byte (`"\0"`, `"\u0000"`) is refused unless `allowsNUL`: the operating system ends an
    /// argument, a path or an environment entry at the first NUL, so `"abc\0; rm -rf /"` would silently
    /// run as `abc`. `maxBytes` bounds names (``Limits/maxNameBytes``).
    func string(_ node: Node, _ subject: String?, field: String, maxBytes: Int? = nil, allowsNUL: Bool = false)
        throws(JobFileError) -> String
    {
        guard case .scalar(let scalar) = node, !Self.isPlain(scalar) || node.null == nil else {
            throw error(at: node, subject, field: field, "\(field) must be text, not \(Self.describe(node))")
        }
        try checkText(scalar.string, at: node, subject, field: field, maxBytes: maxBytes, allowsNUL: allowsNUL)
        return scalar.string
    }

    /// Refuses a NUL byte (unless `allowsNUL`) and text longer than `maxBytes` UTF-8 bytes.
    func checkText(_ text: String, at node: Node, _ subject: String?, field: String, maxBytes: Int? = nil, allowsNUL: Bool = false)
        throws(JobFileError)
    {
        if !allowsNUL, text.containsUTF8(0) {
            throw error(at: node, subject, field: field,
                        "\(field) contains a NUL byte (\\0), which would silently cut it short where it is used; remove it")
        }
        if let maxBytes, text.utf8.count > maxBytes {
            throw error(at: node, subject, field: field, "\(field) is \(text.utf8.count) bytes long; at most \(maxBytes) are allowed")
        }
    }

    /// A name (operation, queue, handler, dependency, key): text of at most ``Limits/maxNameBytes`` bytes.
    func name(_ node: Node, _ subject: String?, field: String) throws(JobFileError) -> String {
        try string(node, subject, field: field, maxBytes: Limits.maxNameBytes)
    }

    /// An integer written as a number, within `range`.
    func int(_ node: Node, _ subject: String?, field: String, in range: ClosedRange<Int>) throws(JobFileError) -> Int {
        guard Self.plainScalar(node) != nil, let value = node.int, range.contains(value) else {
            let written = Self.plainScalar(node) != nil && (node.int != nil || node.float != nil)
                ? "\(Self.plainScalar(node)?.string ?? "")" : Self.describe(node)
            throw error(at: node, subject, field: field,
                        "\(field) must be an integer from \(range.lowerBound) to \(range.upperBound), not \(written)")
        }
        return value
    }

    /// A boolean written as `true` or `false`.
    func bool(_ node: Node, _ subject: String?, field: String) throws(JobFileError) -> Bool {
        guard Self.plainScalar(node) != nil, let value = node.bool else {
            throw error(at: node, subject, field: field, "\(field) must be true or false, not \(Self.describe(node))")
        }
        return value
    }

    /// Seconds: a number, or text with a unit (`90s`, `5m`, `1.5h`), within ``Limits``' duration range
    /// (greater than 0 when `positive`): `1e300`, `-1`, `.nan` and `.inf` are refused here, with the line.
    func seconds(_ node: Node, _ subject: String?, field: String, positive: Bool) throws(JobFileError) -> Double {
        var seconds: Double?
        if Self.plainScalar(node) != nil, node.null == nil, node.bool == nil {
            seconds = node.int.map(Double.init) ?? node.float
        }
        if seconds == nil, case .scalar(let scalar) = node, let unit = scalar.string.last,
           let factor = ["s": 1.0, "m": 60, "h": 3600][unit], let value = Double(scalar.string.dropLast()) {
            seconds = value * factor
        }
        guard let seconds else {
            throw error(at: node, subject, field: field,
                        "\(field) must be a number of seconds (or text like '90s', '5m', '2h'), not \(Self.describe(node))")
        }
        guard Limits.isValidDuration(seconds, positive: positive) else {
            let written = if case .scalar(let scalar) = node { scalar.string } else { "\(seconds)" }
            throw error(at: node, subject, field: field, "\(field) must be \(Limits.durationRange(positive: positive)), not \(written)")
        }
        return seconds
    }

    /// A memory size: bytes (`1048576`) or a number with a unit (`512M`, `2G`; ``ByteSize``), from 0 to
    /// ``Limits/maxMemory``. `2^70`, `-1`, `lots` are refused here, with the line.
    func memory(_ node: Node, _ subject: String?, field: String) throws(JobFileError) -> Int {
        guard case .scalar(let scalar) = node, node.null == nil, node.bool == nil else {
            throw error(at: node, subject, field: field,
                        "\(field) must be a size such as 512M or 2G (K, M, G, T, P are powers of 1024), not \(Self.describe(node))")
        }
        if let problem = Limits.memoryProblem(scalar.string, name: field) { throw error(at: node, subject, field: field, problem) }
        return ByteSize.bytes(parsing: scalar.string)!
    }

    // MARK: Collections

    /// A list of text items with their nodes; a single scalar is taken as a one-item list when `allowSingle`.
    /// At most ``Limits/maxListEntries`` items, each at most `maxBytes` long.
    func strings(_ node: Node, _ subject: String?, field: String, allowSingle: Bool = false, maxBytes: Int? = nil,
                 what: String = "a list of text") throws(JobFileError) -> [(value: String, node: Node)]
    {
        var result: [(String, Node)] = []
        try forEachString(node, subject, field: field, allowSingle: allowSingle, maxBytes: maxBytes, what: what) { result.append(($0, $1)) }
        return result
    }

    /// ``strings(_:_:field:allowSingle:maxBytes:what:)`` without the nodes: only the text.
    func stringValues(_ node: Node, _ subject: String?, field: String, allowSingle: Bool = false, maxBytes: Int? = nil,
                      what: String = "a list of text") throws(JobFileError) -> [String]
    {
        var result: [String] = []
        if case .sequence(let sequence) = node { result.reserveCapacity(sequence.count) }
        try forEachString(node, subject, field: field, allowSingle: allowSingle, maxBytes: maxBytes, what: what) { text, _ in result.append(text) }
        return result
    }

    /// Checks `node` as ``strings(_:_:field:allowSingle:maxBytes:what:)`` does, giving `body` each text and its node.
    private func forEachString(_ node: Node, _ subject: String?, field: String, allowSingle: Bool, maxBytes: Int?, what: String,
                               _ body: (String, Node) -> Void) throws(JobFileError)
    {
        if allowSingle, case .scalar = node { return body(try string(node, subject, field: field, maxBytes: maxBytes), node) }
        guard case .sequence(let sequence) = node else {
            throw error(at: node, subject, field: field, "\(field) must be \(what), not \(Self.describe(node))")
        }
        try count(sequence.count, at: node, subject, field: field, maximum: Limits.maxListEntries)
        for item in sequence {
            guard case .scalar = item else {
                throw error(at: item, subject, field: field, "\(field) must be \(what); an item is \(Self.describe(item))")
            }
            body(try string(item, subject, field: field, maxBytes: maxBytes), item)
        }
    }

    /// Refuses a list of more than `maximum` entries.
    func count(_ count: Int, at node: Node, _ subject: String?, field: String, maximum: Int) throws(JobFileError) {
        if count > maximum { throw error(at: node, subject, field: field, "\(field) holds \(count) entries; at most \(maximum) are allowed") }
    }

    /// A mapping of names to text (`env`, `labels`); values may be written as numbers or booleans.
    /// Keys are non-empty names (``Limits/maxNameBytes``); environment keys (`isEnvironment`) hold no `=`.
    func stringMap(_ node: Node, _ subject: String?, field: String, isEnvironment: Bool = false) throws(JobFileError) -> [String: String] {
        let fields = try fields(node, subject, field: field, allowed: nil, what: "a mapping of names to values")
        try count(fields.entries.count, at: node, subject, field: field, maximum: Limits.maxListEntries)
        var result: [String: String] = [:]
        for entry in fields.entries {
            if entry.key.isEmpty { throw error(at: entry.keyNode, subject, field: field, "\(field) has an empty name") }
            try checkText(entry.key, at: entry.keyNode, subject, field: field, maxBytes: Limits.maxNameBytes)
            if isEnvironment, entry.key.contains("=") {
                throw error(at: entry.keyNode, subject, field: field,
                            "\(field) name '\(entry.key)' contains '=', which would change another variable; remove it")
            }
            result[entry.key] = try string(entry.value, subject, field: "\(field).\(entry.key)")
        }
        return result
    }
}
