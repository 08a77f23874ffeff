import Foundation
import Logging
import OPQCore
import OPQWire
import ZeroMQ

/// An embedded worker: a program offers its own handlers — Foundation `Operation`s — to a coordinator,
/// and runs the operations the coordinator dispatches to it. `opq-worker` is this type behind a command
/// line.
///
/// ```swift
/// final class ThumbnailOperation: Operation, @unchecked Sendable {
///     let request: HandlerContext
///     init(_ request: HandlerContext) { self.request = request }
///     override func main() {
///         for step in 1...10 {
///             if isCancelled { return }           // cooperative cancel
///             render(step)
///             request.reportProgress(fraction: Double(step) / 10, message: "step \(step)")
///         }
///     }
/// }
///
/// let worker = try Worker(coordinator: "tcp://127.0.0.1:7130", slots: 4)
/// worker.register("thumbnail") { request in ThumbnailOperation(request) }
/// try worker.start()                  // or `try worker.run()` to serve on this thread
/// // … later, e.g. on SIGTERM:
/// worker.stop()
/// ```
///
/// A handler factory gets the attempt's ``HandlerContext`` (payload, operation name, QoS, progress
/// reporting) and returns the `Operation` that runs it on the worker's local `OperationQueue` (one slot
/// per concurrent attempt). A plain `Operation` succeeds when it finishes uncancelled and is cancelled
/// cooperatively: a cancel request sets its `isCancelled`, and it is expected to return early. Subclass
/// ``HandlerOperation`` instead for result bytes and errors that fail the attempt. A factory that throws
/// fails the attempt with the error's description.
///
/// Thread-safe. Register handlers before ``run()`` or ``start()``: the coordinator learns the names
/// when the worker registers.
// @unchecked Sendable: `outcome` and `started` are guarded by `condition`; the rest is immutable (the agent is
// itself thread-safe).
public final class Worker: @unchecked Sendable {
    /// How the worker connects and what it offers.
    public let configuration: WorkerConfiguration
    /// The handlers it offers (the built-in `noop`, `sleep` and `sha256` unless left out).
    public let handlers: HandlerRegistry
    private let agent: WorkerAgent
    private let condition = NSCondition()
    private var outcome: Result<Void, any Error>?
    private var started = false

    /// A worker with `configuration`.
    /// - Parameters:
    ///   - builtins: also offer the built-in handlers `noop`, `sleep` and `sha256`.
    ///   - logger: where the worker logs (libraries never bootstrap logging; the program does).
    ///   - context: the ZeroMQ context for the worker's socket, shared with the coordinator when both run
    ///     in one process (then ``WorkerConfiguration/coordinator`` may be its `inproc://` endpoint); nil =
    ///     a context of its own, closed when the worker stops. A shared context is never closed by the worker.
    /// - Throws: ``WorkerConfigurationError`` naming what is wrong with the configuration.
    public init(configuration: WorkerConfiguration, builtins: Bool = true,
                logger: Logger = Logger(label: "opq.worker"), context: Context? = nil) throws(WorkerConfigurationError) {
        if let problem = configuration.problem { throw WorkerConfigurationError(description: problem) }
        self.configuration = configuration
        handlers = builtins ? .withBuiltins() : HandlerRegistry()
        agent = WorkerAgent(configuration: configuration, handlers: handlers, logger: logger, context: context)
    }

    /// A worker serving the coordinator's worker endpoint `coordinator` with `slots` concurrent
    /// operations; see ``WorkerConfiguration`` for the other values.
    public convenience init(
        coordinator: String, name: String = WorkerConfiguration.defaultName(), slots: Int = 1,
        queues: Set<String>? = nil, labels: [String: String] = [:], builtins: Bool = true,
        logger: Logger = Logger(label: "opq.worker")
    ) throws(WorkerConfigurationError) {
        try self.init(configuration: WorkerConfiguration(coordinator: coordinator, name: name, slots: slots,
                                                         queues: queues, labels: labels),
                      builtins: builtins, logger: logger)
    }

    /// Offers handler `name`: each attempt of an operation naming it runs the `Operation` that
    /// `factory` makes from the attempt's ``HandlerContext``. Replaces an earlier factory of that name.
    public func register(_ name: String, factory: @escaping HandlerFactory) {
        handlers.register(name, factory: factory)
    }

    /// Serves the coordinator on the calling thread until ``stop(handBack:reason:)`` has run its course
    /// (losing the coordinator is not an end: the worker reconnects with backoff). Call once, or use
    /// ``start()``.
    /// - Throws: when the connection cannot be set up at all (an invalid endpoint, no file descriptors).
    public func run() throws {
        claimStart()
        do {
            try agent.run()
            finish(.success(()))
        } catch {
            finish(.failure(error))
            throw error
        }
    }

    /// Serves the coordinator on a thread of its own and returns at once; ``waitUntilStopped(timeout:)``
    /// waits for the end and reports an error that ended it.
    public func start() {
        claimStart()
        let thread = Thread { [self] in
            do { try agent.run() } catch {
                finish(.failure(error))
                return
            }
            finish(.success(()))
        }
        thread.name = "opq-worker \(configuration.name)"
        thread.start()
    }

    /// Serves the coordinator as a guest of another loop, on that loop's thread (``PollGuest``: the
    /// coordinator's loop, for the workers of a one-process cluster); returns the guest for the host. Use
    /// it instead of ``run()`` or ``start()``; ``waitUntilStopped(timeout:)`` and ``stop(handBack:reason:)``
    /// work as with them.
    /// - Parameter directLinks: the coordinator's (``OPQCoordinator/Coordinator/directLinks``) when the
    ///   host is that coordinator's loop: the worker then talks to it over a link of them, in memory,
    ///   instead of a socket to ``WorkerConfiguration/coordinator``. They are not thread-safe: only the
    ///   loop that reads them may host the worker.
    /// - Throws: when the worker cannot be set up at all (no lease watchdog, no file descriptors).
    public func hosted(directLinks: DirectLinks? = nil) throws -> any PollGuest {
        claimStart()
        do {
            return try HostedAgent(agent, directLinks: directLinks) { [self] result in finish(result) }
        } catch {
            finish(.failure(error))
            throw error
        }
    }

    /// Asks the worker to stop; returns at once. First call: takes no new work, lets running operations
    /// finish and reports them, then leaves. With `handBack` (or a second call): stops running
    /// operations at once and hands them back to the coordinator to run elsewhere.
    public func stop(handBack: Bool = false, reason: String = "stop requested") {
        agent.stop(handBack: handBack, reason: reason)
    }

    /// Waits until the worker has stopped, at most `seconds` (nil = as long as it takes); returns
    /// whether it stopped. Rethrows the error that ended ``start()``'s thread, if one did.
    @discardableResult
    public func waitUntilStopped(timeout seconds: Double? = nil) throws -> Bool {
        let deadline = seconds.map { Date(timeIntervalSinceNow: $0) }
        let result: Result<Void, any Error>? = condition.withLock {
            while outcome == nil {
                guard let deadline else { condition.wait(); continue }
                if !condition.wait(until: deadline) { break }
            }
            return outcome
        }
        guard let result else { return false }
        try result.get()
        return true
    }

    private func claimStart() {
        let first = condition.withLock {
            defer { started = true }
            return !started
        }
        precondition(first, "Worker.run() or start() can be called only once")
    }

    private func finish(_ result: Result<Void, any Error>) {
        condition.withLock {
            outcome = result
            condition.broadcast()
        }
    }
}

/// What is wrong with a ``WorkerConfiguration``, in words a user can act on.
public struct WorkerConfigurationError: Error, CustomStringConvertible, Sendable {
    /// The problem, e.g. "a worker needs at least one slot, not 0".
    public var description: String
}
