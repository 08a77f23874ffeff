/// Why a submission was refused. Nothing of a refused submission is accepted (SEMANTICS §9).
///
/// Operations are named by their position in the batch (`index`, 0-based) and their name, so a
/// front end can map them back to a file and line.
public enum SubmissionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The batch holds no operation.
    case empty
    /// Two operations of the batch share a name.
    case duplicateName(String, index: Int, firstIndex: Int)
    /// A dependency names nothing in the batch, or an id the coordinator does not know.
    case unknownDependency(index: Int, name: String, reference: DependencyReference, suggestion: String?)
    /// The batch's dependencies form a cycle; the members are listed in cycle order.
    case cycle([String])
    /// A queue setting out of range (`maxConcurrent` below -1).
    case invalidMaxConcurrent(queue: String, value: Int)
    /// A field of an operation is out of range.
    case invalidField(index: Int, name: String, field: String, problem: String)

    public var description: String {
        func label(_ index: Int, _ name: String) -> String {
            name.isEmpty ? "operation #\(index + 1)" : "operation '\(name)'"
        }
        switch self {
        case .empty:
            return "the submission holds no operation"
        case let .duplicateName(name, index, firstIndex):
            return "operation #\(index + 1): duplicate name '\(name)' (first used by operation #\(firstIndex + 1)); names must be unique within a job"
        case let .unknownDependency(index, name, reference, suggestion):
            var hint = suggestion.map { " (did you mean '\($0)'?)" } ?? ""
            if case .id(let id) = reference, id.isReservation {
                hint = " (a reservation never handed out, or that ended: its operation was added, it was given up, or its lease ran out)"
            }
            return "\(label(index, name)): unknown dependency \(reference)\(hint)"
        case let .cycle(members):
            return "dependency cycle: " + (members + members.prefix(1)).map { "'\($0)'" }.joined(separator: " → ")
        case let .invalidMaxConcurrent(queue, value):
            return "queue '\(queue)': maxConcurrent must be -1 (no limit), 0 (hold) or positive, not \(value)"
        case let .invalidField(index, name, field, problem):
            return "\(label(index, name)): \(field) \(problem)"
        }
    }
}

/// Why a request other than a submission was refused. A refused request changes nothing.
public enum RequestError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No operation has this id.
    case unknownOperation(OperationID)
    /// No job has this id.
    case unknownJob(JobID)
    /// No queue has this name.
    case unknownQueue(String)
    /// `maxConcurrent` below -1.
    case invalidMaxConcurrent(queue: String, value: Int)
    /// Adding the dependency would close a cycle; members in cycle order.
    case cycle([OperationID])
    /// A reservation request for fewer than 1 or more than ``Limits/maxReservations`` ids.
    case invalidReservationCount(Int)

    public var description: String {
        switch self {
        case .unknownOperation(let id) where id.isReservation:
            """
            unknown reservation \(id): it was never handed out, or it ended (its operation was added and has an \
            op-N id of its own, it was given up, or its lease ran out because its program is gone)
            """
        case .unknownOperation(let id): "unknown operation \(id)"
        case .unknownJob(let id): "unknown job \(id)"
        case .unknownQueue(let name): "unknown queue '\(name)'"
        case let .invalidMaxConcurrent(queue, value):
            "queue '\(queue)': maxConcurrent must be -1 (no limit), 0 (hold) or positive, not \(value)"
        case .cycle(let members):
            "dependency cycle: " + (members + members.prefix(1)).map(\.description).joined(separator: " → ")
        case .invalidReservationCount(let count):
            "a reservation asks for 1 to \(Limits.maxReservations) ids, not \(count)"
        }
    }
}
