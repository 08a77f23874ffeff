import Foundation
import OPQCore

/// Makes the `Operation` that runs one attempt of a handler. It may throw (e.g. for a bad payload):
/// the attempt then fails with reason `error`.
public typealias HandlerFactory = @Sendable (HandlerContext) throws -> Operation

/// The handlers a worker offers, by name (SEMANTICS §1). Thread-safe.
///
/// A factory may return a ``HandlerOperation`` (recommended: progress, result bytes, errors) or any
/// Foundation `Operation`; a plain `Operation` succeeds when it finishes uncancelled and is cancelled
/// through `cancel()`; its result is its ``HandlerResultProviding/handlerResult`` when it conforms.
// @unchecked Sendable: `factories` is guarded by `lock`.
public final class HandlerRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var factories: [String: HandlerFactory] = [:]

    /// Creates an empty registry.
    public init() {}

    /// A registry holding the built-in handlers `noop`, `sleep` and `sha256`.
    public static func withBuiltins() -> HandlerRegistry {
        let registry = HandlerRegistry()
        BuiltinHandlers.register(in: registry)
        return registry
    }

    /// Registers `factory` under `name`, replacing any previous one.
    public func register(_ name: String, factory: @escaping HandlerFactory) {
        lock.withLock { factories[name] = factory }
    }

    /// The registered names, sorted.
    public var names: [String] { lock.withLock { factories.keys.sorted() } }

    /// The factory for `name`, if registered.
    public func factory(for name: String) -> HandlerFactory? { lock.withLock { factories[name] } }
}

/// A plain Foundation `Operation` (NSInvocationOperation-like) that has a result for its attempt: read
/// once it finished uncancelled; at most `Limits.maxResultBytes`.
public protocol HandlerResultProviding: AnyObject {
    /// The result bytes (empty: none).
    var handlerResult: [UInt8] { get }
}

/// Runs a plain Foundation `Operation` from a handler factory as an attempt: started inline on the
/// queue thread, finished when it reports `isFinished`, cancelled through `cancel()`.
// @unchecked Sendable: restated as every `Operation` subclass must; `inner` is immutable (and Foundation's
// `Operation` is itself thread-safe).
final class ForeignOperationAdapter: AttemptOperation, @unchecked Sendable {
    private let inner: Operation
    /// The context the factory was given (for the result's size check), if known.
    private let context: HandlerContext?

    init(key: AttemptKey, wrapping inner: Operation, context: HandlerContext? = nil) {
        self.inner = inner
        self.context = context
        super.init(key: key)
    }

    override func begin() {
        guard inner.isReady, !inner.isExecuting, !inner.isFinished else {
            return finish(.error("the handler's operation was not ready to start (unfinished dependencies, or already started)"))
        }
        let previous = inner.completionBlock
        let context = context
        inner.completionBlock = { [self] in
            previous?()
            if inner.isCancelled { return finish(.cancelled) }
            let result = (inner as? HandlerResultProviding)?.handlerResult ?? []
            finish(context.map { $0.succeeded(with: result) } ?? AttemptResult(.succeeded, result: result))
        }
        // A plain Operation may block in `main()`: keep it off the queue's Dispatch threads.
        let thread = Thread { [inner] in inner.start() }
        thread.name = "opq-handler-operation"
        thread.start()
    }

    override func stopRequested(_ cause: StopCause) {
        inner.cancel()
    }
}
