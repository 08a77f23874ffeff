import Yams

/// Typed, located access to a composed YAML/JSON tree: every wrong type, unknown key or duplicate key
/// becomes a ``JobFileError`` naming the file, the line, the subject and the field.
struct NodeReader {
    /// The file name used in errors.
    let file: String

    /// 1-based line where `node` starts (nil if Yams kept no mark).
    static func line(of node: Node) -> Int? {
        switch node {
        case .scalar(let scalar): scalar.mark?.line
        case .mapping(let mapping): mapping.mark?.line
        case .sequence(let sequence): sequence.mark?.line
        @unknown default: nil
        }
    }

    /// An error located at `node`.
    func error(at node: Node?, _ subject: String?, field: String?, _ message: String) -> JobFileError {
        JobFileError(file: file, line: node.flatMap(Self.line(of:)), subject: subject, field: field, message: message)
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
            guard case .scalar(let key) = keyNode else {
                throw error(at: keyNode, subject, field: field, "keys must be text, not \(Self.describe(keyNode))")
            }
            let name = key.string
            if let first = seen[name] {
                let firstLine = Self.line(of: first).map { " (first on line \($0))" } ?? ""
                throw error(at: keyNode, subject, field: name, "'\(name)' appears twice\(firstLine)")
            }
            if let allowed, !allowed.contains(name) {
                let hint = Suggestion.closest(to: name, among: allowed).map { "did you mean '\($0)'?" }
                    ?? "expected one of: " + allowed.joined(separator: ", ")
                throw error(at: keyNode, subject, field: name, "unknown field '\(name)' (\(hint))")
            }
            seen[name] = keyNode
            fields.entries.append((name, keyNode, value))
        }
        return fields
    }

    // MARK: Scalars

    /// Text: any scalar but null (numbers and booleans are taken as written: `sleep 1` → "1").
    func string(_ node: Node, _ subject: String?, field: String) throws(JobFileError) -> String {
        guard case .scalar(let scalar) = node, node.null == nil || !Self.isPlain(scalar) else {
            throw error(at: node, subject, field: field, "\(field) must be text, not \(Self.describe(node))")
        }
        return scalar.string
    }

    /// An integer written as a number.
    func int(_ node: Node, _ subject: String?, field: String) throws(JobFileError) -> Int {
        guard Self.plainScalar(node) != nil, let value = node.int else {
            throw error(at: node, subject, field: field, "\(field) must be an integer, not \(Self.describe(node))")
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

    /// Seconds: a number, or text with a unit (`90s`, `5m`, `1.5h`).
    func seconds(_ node: Node, _ subject: String?, field: String) throws(JobFileError) -> Double {
        if Self.plainScalar(node) != nil, node.null == nil, node.bool == nil {
            if let value = node.int { return Double(value) }
            if let value = node.float { return value }
        }
        if case .scalar(let scalar) = node, let unit = scalar.string.last, let factor = ["s": 1.0, "m": 60, "h": 3600][unit],
           let value = Double(scalar.string.dropLast()) {
            return value * factor
        }
        throw error(at: node, subject, field: field,
                    "\(field) must be a number of seconds (or text like '90s', '5m', '2h'), not \(Self.describe(node))")
    }

    // MARK: Collections

    /// A list of text items with their nodes; a single scalar is taken as a one-item list when `allowSingle`.
    func strings(_ node: Node, _ subject: String?, field: String, allowSingle: Bool = false, what: String = "a list of text")
        throws(JobFileError) -> [(value: String, node: Node)]
    {
        if allowSingle, case .scalar = node { return [(try string(node, subject, field: field), node)] }
        guard case .sequence(let sequence) = node else {
            throw error(at: node, subject, field: field, "\(field) must be \(what), not \(Self.describe(node))")
        }
        var result: [(String, Node)] = []
        for item in sequence {
            guard case .scalar = item else {
                throw error(at: item, subject, field: field, "\(field) must be \(what); an item is \(Self.describe(item))")
            }
            result.append((try string(item, subject, field: field), item))
        }
        return result
    }

    /// A mapping of text to text (`env`, `labels`); values may be written as numbers or booleans.
    func stringMap(_ node: Node, _ subject: String?, field: String) throws(JobFileError) -> [String: String] {
        let fields = try fields(node, subject, field: field, allowed: nil, what: "a mapping of names to values")
        var result: [String: String] = [:]
        for entry in fields.entries {
            result[entry.key] = try string(entry.value, subject, field: "\(field).\(entry.key)")
        }
        return result
    }
}
