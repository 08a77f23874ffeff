import Foundation
import OPQCore

// Foundation's `BlockOperation.addExecutionBlock(_:)`, across processes: an operation made of several
// handler calls (``OPQCore/Work/handlers(_:)``) that one worker runs at once (README "Execution blocks").

extension RemoteOperation {
    /// One execution block: a handler name and its payload (`OPQCore.HandlerCall`, named here so that a
    /// program importing only Foundation and OPQClient can write it).
    public typealias HandlerCall = OPQCore.HandlerCall

    /// An operation whose execution blocks are `calls`: each a handler registered on workers with its
    /// own payload, all run at once on one worker (Foundation's `BlockOperation`). Add more with
    /// ``addExecutionBlock(handler:payload:)`` before adding it to a queue.
    public convenience init(executionBlocks calls: [HandlerCall]) { self.init(work: .handlers(calls)) }

    /// Adds an execution block: a call of handler `handler` with `payload`, run at once with the
    /// operation's other blocks on one worker (Foundation's `addExecutionBlock(_:)`). The operation then
    /// finishes when every block has, and fails if one fails (its message names the block and why). Its
    /// ``result`` is the blocks' results in order (``blockResults``).
    ///
    /// Works on an empty operation (`RemoteOperation()`, like an empty `BlockOperation`), on a handler
    /// operation (which becomes its first block) and on one made of blocks.
    /// - Throws: ``ClientError/executionBlockRefused(operation:reason:)`` once the operation was added to
    ///   a queue (where Foundation raises an exception), for an operation that runs commands, for an empty handler name, or beyond `Limits.maxHandlerCallsPerOperation` blocks or
    ///   `Limits.maxHandlerCallPayloadBytes` of payloads. Nothing changes then.
    public func addExecutionBlock(handler: String, payload: [UInt8] = []) throws(ClientError) {
        let refusal: String? = condition.withLock {
            if isClaimed { return "it was already added to a queue; add every block before adding the operation" }
            let calls: [HandlerCall]
            switch definition.work {
            case .empty: calls = []
            case .handler(let name, let payload): calls = [HandlerCall(name, payload: payload)]
            case .handlers(let existing): calls = existing
            case .command, .commands: return "it runs commands; execution blocks are handler calls (use init(commands:) for several commands)"
            }
            let next = calls + [HandlerCall(handler, payload: payload)]
            if let (field, problem) = Limits.handlerCallsProblem(next) { return "\(field) \(problem)" }
            definition.work = .handlers(next)
            return nil
        }
        if let refusal { throw .executionBlockRefused(operation: description, reason: refusal) }
    }

    /// Adds an execution block calling `handler` with a UTF-8 text payload.
    public func addExecutionBlock(handler: String, text: String) throws(ClientError) {
        try addExecutionBlock(handler: handler, payload: Array(text.utf8))
    }

    /// Its execution blocks (Foundation's `executionBlocks`): the handler calls it runs, in order; a
    /// handler operation is one block; empty for an empty operation or one that runs commands.
    public var executionBlocks: [HandlerCall] {
        switch work {
        case .handlers(let calls): calls
        case .handler(let name, let payload): [HandlerCall(name, payload: payload)]
        case .empty, .command, .commands: []
        }
    }

    /// The results of its execution blocks, in the order they were added, once it finished: what each
    /// block's handler returned (``result`` holds them as a JSON array, ``OPQCore/HandlerCall/combinedResult(_:)``).
    /// Empty while it has not finished successfully.
    /// - Throws: ``ClientError/notSubmitted(operation:)`` before it was added; a transport error;
    ///   ``ResultDecodingError`` when the operation is not made of blocks.
    public var blockResults: [Data] {
        get throws {
            let bytes = try result
            if bytes.isEmpty { return [] }
            guard case .handlers = work, let results = HandlerCall.results(in: Array(bytes)) else {
                throw ResultDecodingError(description: "\(description) is not made of execution blocks; read its result instead")
            }
            return results.map { Data($0) }
        }
    }

    /// The results of its execution blocks, each decoded from JSON as `type` (blocks whose handlers were
    /// registered with `encoding:`).
    public func blockResults<T: Decodable>(as type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> [T] {
        try blockResults.map { try decoder.decode(type, from: $0) }
    }
}
