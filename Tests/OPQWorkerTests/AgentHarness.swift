import Foundation
import Logging
import OPQCore
import OPQWire
@testable import OPQWorker

/// A ``WorkerAgent`` running on its own thread against a ``FakeCoordinator``, with test-sized timings:
/// connecting and registering may take 1 s (0.25 s × 4, until the fake's `Welcome` sets its own
/// heartbeat timings), reconnects 0.05 s … 0.2 s apart.
final class AgentHarness: @unchecked Sendable {
    let agent: WorkerAgent
    let gate = Gate()
    private let exited = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var failure: (any Error)?

    init(_ coordinator: FakeCoordinator, name: String = "agent-\(UUID().uuidString.prefix(8))", slots: Int = 2,
         configure: (inout WorkerConfiguration) -> Void = { _ in }) {
        var configuration = WorkerConfiguration(
            coordinator: coordinator.endpoint, name: name, slots: slots, killGracePeriod: 1,
            heartbeatInterval: 0.25, liveness: 4, initialReconnectDelay: 0.05, maximumReconnectDelay: 0.2)
        configure(&configuration)
        let handlers = HandlerRegistry.withBuiltins()
        let gate = gate
        handlers.register("gate") { GateHandler(context: $0, gate: gate) }
        var logger = Logger(label: "opq.worker.test")
        if ProcessInfo.processInfo.environment["OPQ_TEST_LOG"] == nil {
            logger = Logger(label: "opq.worker.test", factory: { _ in SwiftLogNoOpLogHandler() })
        } else {
            logger.logLevel = .trace
        }
        agent = WorkerAgent(configuration: configuration, handlers: handlers, logger: logger)
        let thread = Thread { [self] in
            do { try agent.run() } catch { lock.withLock { failure = error } }
            exited.signal()
        }
        thread.name = "opq-agent-test"
        thread.start()
    }

    /// Whether `run()` returned within `timeout` seconds.
    func waitForExit(timeout: Double = 5) -> Bool {
        guard exited.wait(timeout: .now() + timeout) == .success else { return false }
        exited.signal()  // later callers see it too
        return true
    }

    /// What `run()` threw, if it did.
    var error: (any Error)? { lock.withLock { failure } }

    /// Stops at once (hands everything back) and waits for `run()` to return.
    func stopNow() {
        agent.stop(handBack: true, reason: "test over")
        _ = waitForExit(timeout: 10)
    }
}

/// Opened by a test to let every `gate` handler attempt finish.
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var open = false

    func openGate() { lock.withLock { open = true } }
    var isOpen: Bool { lock.withLock { open } }
}

/// A handler that runs until its gate opens (or it is cancelled).
final class GateHandler: HandlerOperation, @unchecked Sendable {
    let gate: Gate

    init(context: HandlerContext, gate: Gate) {
        self.gate = gate
        super.init(context: context)
    }

    override func execute() throws {
        while !gate.isOpen {
            if waitForCancellation(timeout: 0.01) { return }
        }
    }
}

extension Opq_V1_Report {
    var startedRef: Opq_V1_AttemptRef? { if case .started(let ref) = kind { ref } else { nil } }
    var finishedReport: Opq_V1_Finished? { if case .finished(let finished) = kind { finished } else { nil } }
}

extension Array where Element == Opq_V1_Report {
    /// The `Finished` of `operation`, if one is among these reports.
    func finished(_ operation: UInt64) -> Opq_V1_Finished? {
        lazy.compactMap(\.finishedReport).first { $0.operation == operation }
    }

    /// Whether a `Started` of `operation` is among these reports.
    func started(_ operation: UInt64) -> Bool { contains { $0.startedRef?.operation == operation } }
}

/// Registers the harness's worker with `coordinator` and returns the `Register`.
@discardableResult
func connect(_ coordinator: FakeCoordinator, interval: Double = 0.2, liveness: UInt32 = 5) throws -> Opq_V1_Register? {
    guard let received = try coordinator.register() else { return nil }
    try coordinator.welcome(received.identity, interval: interval, liveness: liveness)
    return received.register
}

/// Every report the harness's worker sends until its `Goodbye` (nil if none comes, each message within 3 s).
func reportsUntilGoodbye(_ coordinator: FakeCoordinator) throws -> (reports: [Opq_V1_Report], goodbye: Opq_V1_Goodbye?) {
    var reports: [Opq_V1_Report] = []
    var goodbye: Opq_V1_Goodbye?
    while goodbye == nil, let received = try coordinator.receive(timeout: 3) {
        reports += received.reports
        goodbye = received.goodbye
    }
    return (reports, goodbye)
}
