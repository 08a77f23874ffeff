import Yams

/// The fields an operation of a job file may hold (`operations:` items), in the order error messages list them.
enum OperationField: Int, CaseIterable {
    case name, command, shell, commands, handler, payload, handlers, after, requires, priority, qos
    case retries, timeout, env, cwd, labels, queue, barrier, inputs, outputs, cpus, memory

    /// The key as written in a job file.
    var key: String { Self.keys[rawValue] }

    static let keys = [
        "name", "command", "shell", "commands", "handler", "payload", "handlers", "after", "requires", "priority", "qos",
        "retries", "timeout", "env", "cwd", "labels", "queue", "barrier", "inputs", "outputs", "cpus", "memory",
    ]
    /// Key → field: one hash per key read.
    static let byKey: [String: OperationField] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.key, $0) })
    /// The keys that say what an operation does; at most one per operation.
    static let work: [OperationField] = [.command, .shell, .commands, .handler, .handlers]
}

/// One operation's mapping, read in one pass (issue 19): which fields it holds, where, and in what
/// order — in two vectors on the stack rather than a list of entries and a dictionary per operation.
/// Built by ``NodeReader/operationEntries(_:_:field:)``, which refuses unknown and duplicate keys.
struct OperationEntries {
    /// The operation's mapping.
    let mapping: Node.Mapping
    /// Per field (``OperationField/rawValue``): its entry's position in `mapping`; -1 when absent.
    private var positions = SIMD32<Int8>(repeating: -1)
    /// The fields in file order (the first `count` lanes).
    private var order = SIMD32<Int8>(repeating: -1)
    /// How many fields the operation holds.
    private(set) var count = 0

    init(_ mapping: Node.Mapping) { self.mapping = mapping }

    /// Records `field` at `position` of the mapping (each field at most once).
    mutating func add(_ field: OperationField, at position: Int) {
        positions[field.rawValue] = Int8(position)
        order[count] = Int8(field.rawValue)
        count += 1
    }

    /// Whether the operation holds `field`.
    func has(_ field: OperationField) -> Bool { positions[field.rawValue] >= 0 }

    /// The value of `field`, if present.
    subscript(field: OperationField) -> Node? {
        let position = Int(positions[field.rawValue])
        return position < 0 ? nil : mapping[mapping.startIndex + position].value
    }

    /// The key node of `field` (its line), if present.
    func keyNode(_ field: OperationField) -> Node? {
        let position = Int(positions[field.rawValue])
        return position < 0 ? nil : mapping[mapping.startIndex + position].key
    }

    /// The `i`th field in file order.
    func field(at i: Int) -> OperationField { OperationField(rawValue: Int(order[i]))! }
}

extension Node.Mapping {
    /// The value of the first entry whose key is the text `key`, if any. By position: iterating a
    /// mapping (`for (key, value) in mapping`, `first(where:)`) makes Yams copy every pair first.
    func firstValue(forKey key: String) -> Node? {
        for position in startIndex..<endIndex {
            let entry = self[position]
            // Yams reads a mapping key `{=: text}` as that text too: its `string`, for keys that are no scalar.
            let matches = if case .scalar(let scalar) = entry.key { scalar.string == key } else { entry.key.string == key }
            if matches { return entry.value }
        }
        return nil
    }
}
