import Foundation
import Testing
import Logging
import OPQCore
import OPQWire
@testable import OPQWorker
import ZeroMQ

/// The workers' side of a coordinator, driven by a test: a ROUTER bound to `ipc://` in a fresh temporary
/// directory. Every wait has a deadline; while waiting it sends heartbeats to the worker it welcomed
/// (unless ``isSilent``), so the worker does not declare it lost.
final class FakeCoordinator: WorkerMessages {
    /// A message from a worker.
    struct Received {
        var identity: [UInt8]
        var message: Opq_V1_WorkerMessage
        var raw: [[UInt8]]

        var register: Opq_V1_Register? { if case .register(let r) = message.body { r } else { nil } }
        var reports: [Opq_V1_Report] { if case .reports(let r) = message.body { r.items } else { [] } }
        var goodbye: Opq_V1_Goodbye? { if case .goodbye(let g) = message.body { g } else { nil } }
        var isHeartbeat: Bool { if case .heartbeat = message.body { true } else { false } }
    }

    let directory: URL
    let endpoint: String
    private let context: Context
    private let router: Socket
    /// The worker to send heartbeats to, set by ``welcome(_:interval:liveness:)``.
    private(set) var worker: [UInt8]?
    /// Seconds between the heartbeats sent while waiting.
    private var interval = 0.2
    private var lastSent = 0.0
    /// While true, nothing is sent unasked (the coordinator "hangs").
    var isSilent = false
    /// The latest `lease_request` from each connection, echoed to it like the real coordinator does.
    private var leaseRequests: [[UInt8]: UInt64] = [:]
    /// Set: every message echoes this instead (messages that arrive but renew nothing, like ones that
    /// queued up while the worker was stopped).
    var frozenEcho: UInt64?
    /// The latest `lease_request` of the welcomed worker.
    var latestLeaseRequest: UInt64 { worker.flatMap { leaseRequests[$0] } ?? 0 }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-agent-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        endpoint = "ipc://\(directory.path)/workers"
        context = try Context()
        router = try Self.bind(context, endpoint)
    }

    private static func bind(_ context: Context, _ endpoint: String) throws -> Socket {
        let router = try context.socket(.router)
        try router.set(.routerMandatory, true)
        try router.set(.routerHandover, true)
        try router.set(.maxMessageSize, Int64(WireLimits.maxFrameBytes))
        try router.bind(endpoint)
        return router
    }

    /// The coordinator goes away: its socket closes (for good: rebinding an `ipc://` path races with
    /// libzmq's asynchronous unlink of the old one).
    func shutDown() { router.close() }

    func close() {
        router.close()
        context.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The next message a worker sends, or nil after `timeout` seconds.
    func receive(timeout: Double = 5) throws -> Received? {
        let deadline = MonotonicClock.now() + timeout
        var poller = Poller()
        let item = try poller.add(router)
        while true {
            let now = MonotonicClock.now()
            if let frames = try router.receiveMultipart(flags: .dontWait) {
                let (identity, message, raw) = try Frames.decodeRouted(frames, as: Opq_V1_WorkerMessage.self)
                leaseRequests[identity] = max(leaseRequests[identity] ?? 0, message.leaseRequest)
                return Received(identity: identity, message: message, raw: raw)
            }
            if now >= deadline { return nil }
            if !isSilent, worker != nil, now - lastSent >= interval { try send(.heartbeat) }
            let wake = min(deadline, worker == nil || isSilent ? deadline : lastSent + interval)
            try poller.poll(timeout: max(0, Int(((wake - now) * 1000).rounded(.up))))
            _ = poller.isReadable(item)
        }
    }

    /// The next message for which `predicate` holds, skipping others; nil after `timeout` seconds.
    func next(timeout: Double = 5, where predicate: (Received) -> Bool) throws -> Received? {
        let deadline = MonotonicClock.now() + timeout
        while let received = try receive(timeout: max(0, deadline - MonotonicClock.now())) {
            if predicate(received) { return received }
        }
        return nil
    }

    /// The next `Register`.
    func register(timeout: Double = 5) throws -> Received? {
        try next(timeout: timeout) { $0.register != nil }
    }

    /// Answers a `Register` from `identity`.
    func welcome(_ identity: [UInt8], interval: Double = 0.2, liveness: UInt32 = 5) throws {
        worker = identity
        self.interval = interval
        try send(Self.welcomeMessage(interval: interval, liveness: liveness))
    }

    /// A `Welcome` with these timings (also for the direct-link host of `DirectLinkHostedAgentTests`).
    static func welcomeMessage(interval: Double, liveness: UInt32) -> Opq_V1_CoordinatorToWorker {
        .with {
            $0.welcome = .with {
                $0.protocolVersion = WireLimits.protocolVersion
                $0.heartbeatIntervalSeconds = interval
                $0.liveness = liveness
                $0.coordinatorID = "fake"
            }
        }
    }

    /// Sends `message` to the welcomed worker.
    func send(_ message: Opq_V1_CoordinatorToWorker) throws {
        var message = message
        if let worker { message.leaseEcho = frozenEcho ?? leaseRequests[worker] ?? 0 }
        try sendRaw(try Frames.encode(message))
    }

    /// Sends arbitrary frames (after the routing id) to the welcomed worker.
    func sendRaw(_ frames: [[UInt8]]) throws {
        let worker = try #require(worker, "no worker welcomed yet")
        lastSent = MonotonicClock.now()
        _ = try router.send([worker] + frames, flags: .dontWait)
    }

    /// Orders the worker to run `work` as attempt `attempt` of `operation`.
    func dispatch(_ operation: UInt64, attempt: UInt32 = 1, _ work: Work, timeout: Double? = nil) throws {
        try send(Self.dispatchMessage(operation, attempt: attempt, work, timeout: timeout))
    }

    /// Orders to run `work` as attempt `attempt` of `operation`.
    static func dispatchMessage(_ operation: UInt64, attempt: UInt32 = 1, _ work: Work, timeout: Double? = nil) -> Opq_V1_CoordinatorToWorker {
        .orders([.dispatch(.with {
            $0.operation = operation
            $0.attempt = attempt
            $0.job = 1
            $0.name = "op\(operation)"
            $0.queue = "default"
            $0.work = Opq_V1_Work(work)
            if let timeout { $0.timeoutSeconds = timeout }
            $0.killGraceSeconds = 1
        })])
    }

    /// Orders the worker to stop attempt `attempt` of `operation`.
    func kill(_ operation: UInt64, attempt: Int = 1, reason: KillReason) throws {
        try send(.orders([.kill(Opq_V1_Kill(OperationID(operation), attempt: attempt, reason: reason))]))
    }
}

/// The coordinator's side of a worker's connection, as a test reads it: the next message for which a
/// predicate holds (``FakeCoordinator`` over a socket; the direct-link host of `DirectLinkHostedAgentTests`).
protocol WorkerMessages {
    /// The next message for which `predicate` holds, skipping others; nil after `timeout` seconds.
    func next(timeout: Double, where predicate: (FakeCoordinator.Received) -> Bool) throws -> FakeCoordinator.Received?
}

extension WorkerMessages {
    /// Collects reports (skipping other messages) until `done` holds for all collected so far; returns
    /// them with the raw frames of the message each came in.
    func reports(timeout: Double = 5, until done: ([Opq_V1_Report]) -> Bool) throws -> [(report: Opq_V1_Report, raw: [[UInt8]])] {
        let deadline = MonotonicClock.now() + timeout
        var collected: [(report: Opq_V1_Report, raw: [[UInt8]])] = []
        while !done(collected.map(\.report)) {
            guard let received = try next(timeout: max(0, deadline - MonotonicClock.now()), where: { !$0.reports.isEmpty })
            else { break }
            collected += received.reports.map { ($0, received.raw) }
        }
        return collected
    }
}
