import Foundation
import OPQCore
import OPQWire

/// How one dependency of a dispatched operation finished, as its dependant's handler sees it: the
/// outcome of a future it waited for, with that handler's result (README "Handler results").
public struct DependencyOutcome: Hashable, Sendable {
    /// The dependency's id.
    public var operation: OperationID
    /// Its name (may be empty).
    public var name: String
    /// How it finished.
    public var outcome: Outcome
    /// Its handler's result; empty when it returned none, or when ``isResultOmitted``.
    public var result: [UInt8]
    /// Its result was left out of the dispatch: the dependencies' results passed
    /// `Limits.maxDispatchResultBytes` in all (read it through a client instead).
    public var isResultOmitted: Bool

    /// Creates a dependency outcome.
    public init(operation: OperationID, name: String = "", outcome: Outcome, result: [UInt8] = [], isResultOmitted: Bool = false) {
        self.operation = operation
        self.name = name
        self.outcome = outcome
        self.result = result
        self.isResultOmitted = isResultOmitted
    }

    /// The result as UTF-8 text, or nil if it is not valid UTF-8.
    public var resultText: String? { String(validating: result, as: UTF8.self) }

    /// The result decoded from JSON as `type`.
    public func result<T: Decodable>(as type: T.Type) throws -> T { try JSONDecoder().decode(type, from: Data(result)) }
}

extension DependencyOutcome {
    /// The outcome a dispatch carries; nil when it names no outcome.
    init?(_ wire: Opq_V1_DependencyOutcome) {
        guard let outcome = wire.outcome.core else { return nil }
        self.init(operation: OperationID(wire.operation), name: wire.name, outcome: outcome, result: Array(wire.result),
                  isResultOmitted: wire.resultOmitted)
    }
}

extension RunRequest {
    /// Takes the dependency outcomes a dispatch carries: a handler sees them in its context; a command
    /// gets each named dependency's result, when it is UTF-8 text without NUL, in its environment as
    /// ``resultVariable(for:)`` (README "Handler results").
    mutating func receive(_ wire: [Opq_V1_DependencyOutcome]) {
        guard !wire.isEmpty else { return }
        dependencies = wire.compactMap(DependencyOutcome.init)
        var variables: [String: String] = [:]
        for dependency in dependencies where !dependency.name.isEmpty {
            guard let text = dependency.resultText, !text.contains("\0") else { continue }
            variables[Self.resultVariable(for: dependency.name)] = text
        }
        guard !variables.isEmpty else { return }
        func passing(_ command: Command) -> Command {
            var command = command
            command.environment.merge(variables) { own, _ in own }
            return command
        }
        switch work {
        case .command(let command): work = .command(passing(command))
        case .commands(let commands): work = .commands(commands.map(passing))
        case .handler, .handlers, .empty: break
        }
    }

    /// The environment variable that holds dependency `name`'s result in a dependant's commands:
    /// `OPQ_RESULT_` and the name with every character other than an ASCII letter, digit or `_` as `_`
    /// (`checksum` → `OPQ_RESULT_checksum`, `make-thumb` → `OPQ_RESULT_make_thumb`).
    public static func resultVariable(for name: String) -> String {
        DependencyVariable.name("OPQ_RESULT_", name)
    }
}

extension HandlerContext {
    /// The context of the handler running on this thread (Foundation's `OperationQueue.current`, and
    /// more): set while a ``HandlerOperation``'s `execute()` runs, and in each block of a
    /// ``BlockHandlerOperation``; nil elsewhere (e.g. in a plain Foundation `Operation` a factory
    /// returns: it gets its context from the factory). Its ``queueName`` is the queue it runs for.
    @TaskLocal public static var current: HandlerContext?

    /// The first dependency named `name`, or nil.
    public func dependency(named name: String) -> DependencyOutcome? { dependencies.first { $0.name == name } }

    /// Whether the attempt was asked to stop (a cancel, a timeout, a worker shutdown): the
    /// `isCancelled` of the operation running it. For handlers registered with
    /// ``HandlerRegistry/register(_:returning:)``, which see only their context.
    public var isCancelled: Bool { progressChannel.isCancelled }

    /// The operation in messages: `op-42 'resize'`.
    var operationDescription: String { operationName.isEmpty ? "\(key.operation)" : "\(key.operation) '\(operationName)'" }

    /// A success that carries `result`; an `error` failure naming the operation when the result is over
    /// `Limits.maxResultBytes`.
    func succeeded(with result: [UInt8]) -> AttemptResult {
        if let problem = Limits.resultSizeProblem(result.count, handler: handler, operation: operationDescription) {
            return .error(problem)
        }
        return AttemptResult(.succeeded, result: result)
    }
}

extension HandlerRegistry {
    /// Registers a handler whose `body` returns the operation's result (NSInvocationOperation's
    /// `result`): bytes that clients read as `RemoteOperation.result`, kept apart from stdout. `body`
    /// runs on a thread of its own and may block; it should return early when `context.isCancelled`.
    /// Throwing fails the attempt with reason `error`.
    public func register(_ name: String, returning body: @escaping @Sendable (HandlerContext) throws -> [UInt8]) {
        register(name) { context in ResultHandler(context: context, body: body) }
    }

    /// Registers a handler whose result is `body`'s value encoded as JSON (clients decode it with
    /// `RemoteOperation.result(as:)`).
    public func register<Value: Encodable>(_ name: String, encoding body: @escaping @Sendable (HandlerContext) throws -> Value) {
        register(name, returning: { context in Array(try JSONEncoder().encode(try body(context))) })
    }

    /// Registers a handler that runs several blocks at once (Foundation's `BlockOperation` with
    /// `addExecutionBlock`): the attempt ends when all have returned and fails if any threw.
    public func register(_ name: String, blocks: [BlockHandlerOperation.Block]) {
        register(name) { context in
            let operation = BlockHandlerOperation(context: context)
            for block in blocks { operation.addExecutionBlock(block) }
            return operation
        }
    }
}

/// A handler made of a closure that returns the result.
// @unchecked Sendable: restated as every `Operation` subclass must; its own state is one immutable `let`.
final class ResultHandler: HandlerOperation, @unchecked Sendable {
    private let body: @Sendable (HandlerContext) throws -> [UInt8]

    init(context: HandlerContext, body: @escaping @Sendable (HandlerContext) throws -> [UInt8]) {
        self.body = body
        super.init(context: context)
    }

    override func execute() throws { result = try body(context) }
}

/// A handler that runs several blocks concurrently, like Foundation's `BlockOperation`: add them with
/// ``addExecutionBlock(_:)`` before the queue starts it. Every block runs (each on a thread of its own,
/// so blocks may block); the attempt finishes when all have returned, and fails with reason `error` if
/// any threw (the message names the first failing block, by position). A block reads the context,
/// `isCancelled` and sets ``HandlerOperation/result`` through the operation it is given.
// @unchecked Sendable: restated as every `Operation` subclass must; `blocks` and `started` are guarded by `lock`.
public final class BlockHandlerOperation: HandlerOperation, @unchecked Sendable {
    /// One block; it receives the operation it runs in.
    public typealias Block = @Sendable (BlockHandlerOperation) throws -> Void

    private let lock = NSLock()
    private var blocks: [Block] = []
    private var started = false

    /// Creates the operation with `block` as its first block, if given.
    public init(context: HandlerContext, block: Block? = nil) {
        super.init(context: context)
        if let block { blocks.append(block) }
    }

    /// Adds a block. Returns false (and adds nothing) once the operation has started, where Foundation
    /// raises an exception.
    @discardableResult
    public func addExecutionBlock(_ block: @escaping Block) -> Bool {
        lock.withLock {
            guard !started else { return false }
            blocks.append(block)
            return true
        }
    }

    /// How many blocks it has.
    public var executionBlockCount: Int { lock.withLock { blocks.count } }

    override public func execute() throws {
        let blocks = lock.withLock {
            started = true
            return self.blocks
        }
        guard !blocks.isEmpty else { return }
        let failures = BlockFailures(count: blocks.count)
        let group = DispatchGroup()
        for (position, block) in blocks.enumerated().dropFirst() {
            group.enter()
            let context = context
            let thread = Thread { [self] in
                HandlerContext.$current.withValue(context) { failures.run(position) { try block(self) } }
                group.leave()
            }
            thread.name = "opq-handler-\(context.handler)-block\(position + 1)"
            thread.start()
        }
        failures.run(0) { try blocks[0](self) }
        group.wait()
        if let (position, error) = failures.first {
            throw HandlerError("block \(position + 1) of \(blocks.count) failed: \(error)")
        }
    }
}

/// The errors of a ``BlockHandlerOperation``'s blocks, by position. Thread-safe.
// @unchecked Sendable: `errors` is guarded by `lock`.
private final class BlockFailures: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [(any Error)?]

    init(count: Int) { errors = Array(repeating: nil, count: count) }

    func run(_ position: Int, _ body: () throws -> Void) {
        do { try body() } catch { lock.withLock { errors[position] = error } }
    }

    /// The first failing block's position and error.
    var first: (Int, any Error)? {
        lock.withLock {
            for (position, error) in errors.enumerated() { if let error { return (position, error) } }
            return nil
        }
    }
}

extension Worker {
    /// Offers handler `name` whose `body` returns the operation's result
    /// (``HandlerRegistry/register(_:returning:)``).
    public func register(_ name: String, returning body: @escaping @Sendable (HandlerContext) throws -> [UInt8]) {
        handlers.register(name, returning: body)
    }

    /// Offers handler `name` whose result is `body`'s value as JSON (``HandlerRegistry/register(_:encoding:)``).
    public func register<Value: Encodable>(_ name: String, encoding body: @escaping @Sendable (HandlerContext) throws -> Value) {
        handlers.register(name, encoding: body)
    }

    /// Offers handler `name` that runs `blocks` at once (``HandlerRegistry/register(_:blocks:)``).
    public func register(_ name: String, blocks: [BlockHandlerOperation.Block]) {
        handlers.register(name, blocks: blocks)
    }
}
