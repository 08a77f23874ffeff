import OPQCore
import OPQWire

/// Why the coordinator refused a request, with the details a front end needs to point at the mistake
/// (a file line, a field, the members of a cycle). Nothing changed on the coordinator (SEMANTICS §9).
public struct Refusal: Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal it is.
    public enum Code: Sendable, Hashable {
        /// The request did not decode or validate (``Refusal/field`` names the field).
        case malformedMessage
        /// Wrong protocol signature or version.
        case unsupportedProtocol
        /// The coordinator failed (e.g. its state disk is full); retry later.
        case `internal`
        /// A live session holds this worker name.
        case workerNameInUse
        /// A submission without operations.
        case emptySubmission
        /// Two operations of a submission share a name (``Refusal/name``, ``Refusal/index``, ``Refusal/firstIndex``).
        case duplicateName
        /// A dependency on an operation that does not exist (``Refusal/reference``, ``Refusal/suggestion``).
        case unknownDependency
        /// A dependency cycle (``Refusal/cycleNames`` in a submission, ``Refusal/cycleOperations`` for an edge).
        case cycle
        /// A negative `maxConcurrentOperationCount` other than -1 (``Refusal/queue``, ``Refusal/value``).
        case invalidMaxConcurrent
        /// A field of an operation is invalid (``Refusal/field``, ``Refusal/problem``).
        case invalidField
        /// No such operation (``Refusal/operation``).
        case unknownOperation
        /// No such job (``Refusal/job``).
        case unknownJob
        /// No such queue (``Refusal/queue``).
        case unknownQueue
        /// A code this client does not know (a newer coordinator).
        case other(Int)
    }

    /// The kind of refusal.
    public var code: Code
    /// A complete sentence saying what is wrong.
    public var message: String
    /// The 0-based position of the offending operation in the submission.
    public var index: Int?
    /// The offending operation's name (may be empty).
    public var name: String
    /// For ``Code/duplicateName``: where the name was first used.
    public var firstIndex: Int?
    /// For ``Code/invalidField`` and ``Code/malformedMessage``: the field.
    public var field: String
    /// For ``Code/invalidField``: what is wrong with it.
    public var problem: String
    /// For ``Code/unknownDependency``: the reference that did not resolve.
    public var reference: DependencyReference?
    /// For ``Code/unknownDependency``: a close name ("did you mean").
    public var suggestion: String?
    /// For ``Code/cycle`` in a submission: the members' names, in cycle order.
    public var cycleNames: [String]
    /// For ``Code/cycle`` on a dependency edge: the members' ids, in cycle order.
    public var cycleOperations: [UInt64]
    /// For ``Code/invalidMaxConcurrent`` and ``Code/unknownQueue``: the queue.
    public var queue: String
    /// For ``Code/invalidMaxConcurrent``: the rejected value.
    public var value: Int64?
    /// For ``Code/unknownOperation``: its id.
    public var operation: UInt64
    /// For ``Code/unknownJob``: its id.
    public var job: UInt64

    /// The refusal of a submission as the core's error (to locate it in a job file), when it is one.
    public var submissionError: SubmissionError?

    public var description: String { message }

    init(_ error: Opq_V1_Error) {
        code = switch error.code {
        case .malformedMessage: .malformedMessage
        case .unsupportedProtocol: .unsupportedProtocol
        case .internal: .internal
        case .workerNameInUse: .workerNameInUse
        case .emptySubmission: .emptySubmission
        case .duplicateName: .duplicateName
        case .unknownDependency: .unknownDependency
        case .cycle: .cycle
        case .invalidMaxConcurrent: .invalidMaxConcurrent
        case .invalidField: .invalidField
        case .unknownOperation: .unknownOperation
        case .unknownJob: .unknownJob
        case .unknownQueue: .unknownQueue
        case .unspecified: .other(0)
        case .UNRECOGNIZED(let raw): .other(raw)
        }
        message = error.message
        index = error.hasIndex ? Int(error.index) : nil
        name = error.name
        firstIndex = error.hasFirstIndex ? Int(error.firstIndex) : nil
        field = error.field
        problem = error.problem
        reference = error.hasReference ? error.reference.core : nil
        suggestion = error.hasSuggestion ? error.suggestion : nil
        cycleNames = error.cycleNames
        cycleOperations = error.cycleOperations
        queue = error.queue
        value = error.hasValue ? error.value : nil
        operation = error.operation
        job = error.job
        submissionError = error.submissionError
    }
}
