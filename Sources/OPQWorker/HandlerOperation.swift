import Foundation
import OPQCore

/// What a handler is given: the attempt, the operation's name, queue and QoS, the payload, how its
/// dependencies finished (with their results); and a way to report progress from any `Operation`
/// (``reportProgress(fraction:message:)``).
public struct HandlerContext: Sendable {
    /// The attempt being run.
    public var key: AttemptKey
    /// The operation's name.
    public var operationName: String
    /// The queue it runs for (Foundation's `OperationQueue.current`, by name).
    public var queueName: String
    /// The handler name it was registered under.
    public var handler: String
    /// The payload bytes from the submission.
    public var payload: [UInt8]
    /// The operation's QoS.
    public var qualityOfService: OPQCore.QualityOfService
    /// Its explicit dependencies as they finished, in the order they were added, with their handlers'
    /// results (the futures it waited for; README "Handler results").
    public var dependencies: [DependencyOutcome]
    /// Where ``reportProgress(fraction:message:)`` goes: the attempt's operation, once the runner made it.
    let progressChannel = ProgressChannel()

    /// Creates a context.
    public init(key: AttemptKey, operationName: String = "", queueName: String = "", handler: String, payload: [UInt8] = [],
                qualityOfService: OPQCore.QualityOfService = .default, dependencies: [DependencyOutcome] = []) {
        self.key = key
        self.operationName = operationName
        self.queueName = queueName
        self.handler = handler
        self.payload = payload
        self.qualityOfService = qualityOfService
        self.dependencies = dependencies
    }

    /// The payload as UTF-8 text, or nil if it is not valid UTF-8.
    public var payloadText: String? { String(validating: payload, as: UTF8.self) }

    /// Reports the attempt's progress (`fraction` in 0…1, clamped; an optional message) to the
    /// coordinator, where clients see it (`RemoteOperation.reportedProgress`, progress events).
    /// Thread-safe; for any `Operation` a factory returns. Nothing is sent after the attempt ended.
    public func reportProgress(fraction: Double, message: String? = nil) {
        progressChannel.send(fraction: fraction, message: message)
    }
}

/// Connects a ``HandlerContext`` to the operation that runs its attempt, which exists only after the
/// factory that received the context returned.
// @unchecked Sendable: its one mutable property, the weak `target`, is guarded by `lock` (a weak reference
// cannot live in a checked-Sendable class).
final class ProgressChannel: @unchecked Sendable {
    private let lock = NSLock()
    private weak var target: AttemptOperation?

    func connect(_ operation: AttemptOperation) { lock.withLock { target = operation } }

    /// The connected operation's `isCancelled` (false before it is connected).
    var isCancelled: Bool { lock.withLock { target }?.isCancelled ?? false }

    func send(fraction: Double, message: String?) {
        lock.withLock { target }?.emitProgress(fraction: fraction, message: message)
    }
}

/// A handler's error that the user can act on; its description becomes the attempt's message.
public struct HandlerError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public var description: String

    /// Creates an error with `description`.
    public init(_ description: String) { self.description = description }
}

/// Base class of in-process handlers: override ``execute()``, set ``result``, check `isCancelled`.
///
/// The ``result`` travels to the coordinator apart from stdout and stderr, and clients read it as the
/// operation's result (NSInvocationOperation's `result`); more than `Limits.maxResultBytes` (1 MiB)
/// fails the attempt with reason `error` and a message naming the operation.
///
/// `execute()` runs on one of the local queue's threads and may block. Returning normally succeeds
/// (unless the operation was cancelled meanwhile: then it is `cancelled`); throwing fails the attempt
/// with reason `error` and the error's description as message and in stderr. A cancel sets `isCancelled`
/// and wakes ``waitForCancellation(timeout:)``; a handler is expected to return early.
// @unchecked Sendable: restated as every `Operation` subclass must; `resultBytes` is guarded by `resultLock`,
// `cancelSignal` is a thread-safe semaphore, `context` is immutable.
open class HandlerOperation: AttemptOperation, @unchecked Sendable {
    /// What the handler was given.
    public let context: HandlerContext
    private let resultLock = NSLock()
    private var resultBytes: [UInt8] = []
    private let cancelSignal = DispatchSemaphore(value: 0)

    /// Creates a handler operation for `context`.
    public init(context: HandlerContext) {
        self.context = context
        super.init(key: context.key)
    }

    /// The result bytes sent back with the completion (e.g. a digest). Thread-safe.
    public var result: [UInt8] {
        get { resultLock.withLock { resultBytes } }
        set { resultLock.withLock { resultBytes = newValue } }
    }

    /// The handler's work. The default does nothing.
    open func execute() throws {}

    /// Forwards progress (`fraction` in 0…1) to the runner's event sink.
    public func reportProgress(fraction: Double, message: String? = nil) {
        emitProgress(fraction: fraction, message: message)
    }

    /// Waits until the operation is cancelled or `timeout` seconds pass; returns true if cancelled.
    /// A cancellable replacement for `sleep`.
    public func waitForCancellation(timeout: Double) -> Bool {
        if isCancelled { return true }
        _ = cancelSignal.wait(timeout: .now() + max(timeout, 0))
        return isCancelled
    }

    /// Whether ``execute()`` runs on a thread of its own (the default) rather than on the queue's
    /// Dispatch thread. A handler that blocks (sleeps, reads files) must not hold Dispatch threads: with
    /// more blocked handlers than cores, the queue would wait for Dispatch to grow its pool (about a
    /// second) before it could start anything else. Override to return false only for handlers that
    /// return at once (`noop`), saving a thread per attempt.
    open var executesOnOwnThread: Bool { true }

    override public final func begin() {
        guard executesOnOwnThread else { return run() }
        let thread = Thread { [self] in run() }
        thread.name = "opq-handler-\(context.handler)"
        thread.start()
    }

    private func run() {
        do {
            try HandlerContext.$current.withValue(context) { try execute() }
            if isCancelled { return finish(.cancelled) }
            finish(context.succeeded(with: result))
        } catch {
            if isCancelled { return finish(.cancelled) }
            finish(.error("handler '\(context.handler)' failed: \(error)"))
        }
    }

    override public final func stopRequested(_ cause: StopCause) {
        cancelSignal.signal()
    }
}
