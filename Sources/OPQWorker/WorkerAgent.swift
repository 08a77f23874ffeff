import Foundation
import Logging
import OPQCore
import OPQSpawn
import ZeroMQ

/// A worker: serves a coordinator with the handlers and commands it can run (DESIGN "Worker").
///
/// Programs (and `opq-worker`) use it through ``Worker``, the public facade that validates the
/// configuration, registers handlers and runs the agent on the caller's thread or one of its own.
///
/// ``run()`` owns the connection: one DEALER socket, used only by the calling thread. The attempts run
/// on an ``AttemptRunner``, whose events reach that thread through an ``EventInbox``. The agent
/// registers (and re-registers after every reconnect, naming what it still holds), runs dispatches,
/// kills on request, batches its reports, exchanges heartbeats, and leaves with a `Goodbye` when stopped.
// @unchecked Sendable: `requestedStop`, `stopReason` and `hasRun` are guarded by `lock`; `leaseWatchdog` is
// written and read only by the thread in ``run()``; the rest is immutable or thread-safe itself.
public final class WorkerAgent: @unchecked Sendable {
    /// How far a stop has gone; only increases.
    enum StopLevel: Int, Comparable, Sendable {
        /// Serving.
        case running
        /// Graceful: take nothing new, let running attempts finish.
        case draining
        /// Stop every attempt and hand it back.
        case handingBack

        static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The configuration it was created with.
    public let configuration: WorkerConfiguration
    /// The handlers it offers.
    public let handlers: HandlerRegistry
    /// Where the attempts run.
    public let runner: AttemptRunner

    let logger: Logger
    let inbox: EventInbox
    /// Flow control of streamed output: commands' output waits here for the coordinator's acknowledgements.
    let outputWindow = OutputWindow()
    /// Kills the commands when the lease ends; set by ``run()`` (only its thread reads it).
    var leaseWatchdog: LeaseWatchdog?
    /// Drains and reaps the commands' processes; set by ``run()``, whose thread (the socket thread)
    /// services it in its poll: a command's end is reported with no hop to another thread.
    var childMonitor: ChildMonitor?
    /// The ZeroMQ context given at creation (shared with an in-process coordinator), or nil: the
    /// connection makes its own and closes it.
    let sharedContext: Context?
    private let lock = NSLock()
    private var requestedStop = StopLevel.running
    private var stopReason = ""
    private var hasRun = false

    /// Creates an agent; nothing connects until ``run()``.
    ///
    /// `context`: see ``Worker/init(configuration:builtins:logger:context:)``.
    ///
    /// - Precondition: `configuration.problem` is nil (executables check it first and report it).
    public init(configuration: WorkerConfiguration, handlers: HandlerRegistry = .withBuiltins(), logger: Logger,
                context: Context? = nil) {
        if let problem = configuration.problem { preconditionFailure("WorkerAgent: invalid configuration: \(problem)") }
        self.configuration = configuration
        sharedContext = context
        self.handlers = handlers
        var logger = logger
        logger[metadataKey: "worker.id"] = .string(configuration.name)
        self.logger = logger
        inbox = EventInbox()
        runner = AttemptRunner(slots: configuration.slots, worker: WorkerID(configuration.name),
                               handlers: handlers, events: inbox.sink)
        runner.outputWindow = outputWindow
    }

    /// Serves the coordinator on the calling thread until ``stop(handBack:)`` has run its course.
    ///
    /// Losing the coordinator is not an error: the agent reconnects with backoff for as long as it runs.
    /// Call once.
    ///
    /// - Throws: `ZMQError` when the connection cannot be set up at all (an invalid endpoint, a
    ///   routing id libzmq refuses), or `SystemError` when the process is out of file descriptors —
    ///   before any work was taken.
    public func run() throws {
        let connection = try open()
        defer { close(connection) }
        try connection.run()
    }

    /// Sets up what serving needs, once: the lease watchdog (no command may run without it: SEMANTICS §7,
    /// leases), the child monitor and the connection (nothing connects until its first turn).
    func open() throws -> AgentConnection {
        let first = lock.withLock {
            defer { hasRun = true }
            return !hasRun
        }
        precondition(first, "WorkerAgent.run() can be called only once")
        if let failure = inbox.failure { throw failure }
        let watchdog = try LeaseWatchdog()
        leaseWatchdog = watchdog
        runner.leaseWatchdog = watchdog
        let children = try ChildMonitor()
        childMonitor = children
        runner.childMonitor = children
        return try AgentConnection(agent: self)
    }

    /// After the connection's last turn, on the thread that served it: whatever ended the loop, no child
    /// process may outlive the agent (after a stop nothing is held any more, and this returns at once).
    func close(_ connection: AgentConnection) {
        connection.end()
        outputWindow.open()
        runner.shutdown(handBack: true, timeout: 0)
        if let childMonitor { reapUntilIdle(childMonitor, timeout: configuration.killGracePeriod + 1) }
    }

    /// Services `children` on this thread (nobody else does once the loop is over) until every attempt is
    /// reported or `timeout` seconds have passed.
    private func reapUntilIdle(_ children: ChildMonitor, timeout: Double) {
        let deadline = MonotonicClock.now() + timeout
        while !runner.waitUntilIdle(timeout: 0) {
            let left = deadline - MonotonicClock.now()
            guard left > 0 else { return }
            // Handlers end on threads of their own: looked at every 100 ms at most.
            children.service(timeout: Int32(min(100, max(1, (left * 1000).rounded(.up)))))
        }
    }

    /// Asks the agent to stop; thread-safe, returns at once (``run()`` returns when the stop is done).
    ///
    /// - `handBack: false` (the first SIGINT/SIGTERM): take no new work, let running attempts finish and
    ///   report them, then leave with a `Goodbye`.
    /// - `handBack: true`, or a second `stop`: stop running attempts at once (commands are killed) and
    ///   leave, handing them back to the coordinator in the `Goodbye` so they run elsewhere.
    ///
    /// Stopping more often than that changes nothing. `reason` (e.g. `"SIGTERM"`) goes into the
    /// `Goodbye` and the logs.
    public func stop(handBack: Bool = false, reason: String = "stop requested") {
        lock.withLock {
            let wanted: StopLevel = handBack || requestedStop >= .draining ? .handingBack : .draining
            requestedStop = max(requestedStop, wanted)
            stopReason = reason
        }
        inbox.wake()
    }

    /// The stop level asked for so far (read by the socket thread).
    var stopRequest: StopLevel { lock.withLock { requestedStop } }

    /// The reason given to the latest ``stop(handBack:reason:)``.
    var lastStopReason: String { lock.withLock { stopReason } }
}
