import OPQCore

// Refusals: SubmissionError, RequestError and WireError as the wire `Error`, and back. The details
// (operation index and name, field, reference, cycle members) travel as fields, so a client can point
// at the file line of the offending operation.

extension Opq_V1_Error {
    /// The wire form of a refused submission.
    public init(_ error: SubmissionError) {
        self.init()
        message = error.description
        switch error {
        case .empty:
            code = .emptySubmission
        case let .duplicateName(name, index, firstIndex):
            code = .duplicateName
            self.name = name
            self.index = UInt32(clamping: index)
            self.firstIndex = UInt32(clamping: firstIndex)
        case let .unknownDependency(index, name, reference, suggestion):
            code = .unknownDependency
            self.index = UInt32(clamping: index)
            self.name = name
            self.reference = Opq_V1_DependencyRef(reference)
            if let suggestion { self.suggestion = suggestion }
        case .cycle(let members):
            code = .cycle
            cycleNames = members
        case let .invalidMaxConcurrent(queue, value):
            code = .invalidMaxConcurrent
            self.queue = queue
            self.value = Int64(value)
        case let .invalidField(index, name, field, problem):
            code = .invalidField
            self.index = UInt32(clamping: index)
            self.name = name
            self.field = field
            self.problem = problem
        }
    }

    /// The wire form of a refused request.
    public init(_ error: RequestError) {
        self.init()
        message = error.description
        switch error {
        case .unknownOperation(let id):
            code = .unknownOperation
            operation = id.rawValue
        case .unknownJob(let id):
            code = .unknownJob
            job = id.rawValue
        case .unknownQueue(let name):
            code = .unknownQueue
            queue = name
        case let .invalidMaxConcurrent(queue, value):
            code = .invalidMaxConcurrent
            self.queue = queue
            self.value = Int64(value)
        case .cycle(let members):
            code = .cycle
            cycleOperations = members.map(\.rawValue)
        case .invalidReservationCount(let count):
            code = .malformedMessage
            field = "ClientRequest.reserve.count"
            value = Int64(count)
        }
    }

    /// The wire form of a message that did not decode or validate (sent to the client that sent it).
    public init(_ error: WireError) {
        self.init()
        code = error.isProtocolMismatch ? .unsupportedProtocol : .malformedMessage
        message = error.description
        if let field = error.field { self.field = field }
    }

    /// The submission error this wire error carries; nil when it is not one (a request or protocol error).
    public var submissionError: SubmissionError? {
        let index = Int(self.index)
        switch code {
        case .emptySubmission:
            return .empty
        case .duplicateName:
            return .duplicateName(name, index: index, firstIndex: Int(firstIndex))
        case .unknownDependency:
            guard let reference = reference.core else { return nil }
            return .unknownDependency(index: index, name: name, reference: reference,
                                      suggestion: hasSuggestion ? suggestion : nil)
        case .cycle where cycleOperations.isEmpty:
            return .cycle(cycleNames)
        case .invalidMaxConcurrent:
            return .invalidMaxConcurrent(queue: queue, value: Int(clamping: value))
        case .invalidField:
            return .invalidField(index: index, name: name, field: field, problem: problem)
        default:
            return nil
        }
    }

    /// The request error this wire error carries; nil when it is not one.
    public var requestError: RequestError? {
        switch code {
        case .unknownOperation: .unknownOperation(OperationID(operation))
        case .unknownJob: .unknownJob(JobID(job))
        case .unknownQueue: .unknownQueue(queue)
        case .invalidMaxConcurrent: .invalidMaxConcurrent(queue: queue, value: Int(clamping: value))
        case .cycle where cycleNames.isEmpty: .cycle(cycleOperations.map(OperationID.init))
        default: nil
        }
    }
}

extension Opq_V1_Disconnect {
    /// A disconnect telling a worker why its message was refused.
    public init(_ error: WireError) {
        self.init()
        code = error.isProtocolMismatch ? .unsupportedProtocol : .malformedMessage
        reason = error.description
    }
}
