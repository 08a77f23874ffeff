import Testing
@testable import OPQCore

/// Builds an operation spec tersely: `op("a", after: "b", priority: .high)`.
func op(
    _ name: String, queue: String = "default", after: [String] = [], ids: [OperationID] = [],
    priority: QueuePriority = .normal, requires: Requirement = .any, retries: Int = 0, timeout: Double? = nil,
    labels: [String: String] = [:], barrier: Bool = false, empty: Bool = false
) -> OperationSpec {
    OperationSpec(
        name: name, queue: queue, work: empty ? .empty : .command(Command(["true", name])),
        dependencies: after.map(DependencyReference.name) + ids.map(DependencyReference.id),
        priority: priority, requires: requires, retries: retries, timeout: timeout, labels: labels, isBarrier: barrier)
}

/// Drives a `Scheduler` by operation names, checking invariants after every step, and renders effects
/// as short strings ("dispatch a→w1", "a finished cancelled") so tests state exact effect sequences.
struct Harness {
    var core: Scheduler
    var time: Timestamp = 0
    var ids: [String: OperationID] = [:]
    var names: [OperationID: String] = [:]
    /// Every effect so far, rendered.
    var log: [String] = []
    /// Operations dispatched so far, in order ("name" per dispatch).
    var dispatchOrder: [String] = []
    /// Current attempt and worker of each dispatched operation, from `.dispatch` effects.
    var held: [String: (attempt: Int, worker: WorkerID)] = [:]
    var pending: [String] = []

    init(configuration: Scheduler.Configuration = .init()) {
        core = Scheduler(configuration: configuration)
    }

    func id(_ name: String) -> OperationID { ids[name]! }

    /// Accepts a batch, naming its operations for later steps.
    @discardableResult
    mutating func submit(_ specs: [OperationSpec], settings: [(queue: String, settings: QueueSettings)] = []) throws -> SubmissionReceipt {
        let receipt = try core.submit(Submission(specs, queueSettings: settings), at: time)
        for (spec, id) in zip(specs, receipt.operations) where !spec.name.isEmpty {
            ids[spec.name] = id
            names[id] = spec.name
        }
        try step()
        return receipt
    }

    /// Renders and records effects produced since the last step, then checks invariants.
    mutating func step() throws {
        for effect in core.takeEffects() {
            // What workers caused is journaled as records of its own; the rule tests state the events.
            guard let line = render(effect) else { continue }
            log.append(line)
            pending.append(line)
            if case let .dispatch(id, attempt, worker, _) = effect {
                dispatchOrder.append(name(id))
                held[name(id)] = (attempt, worker)
            }
        }
        try core.checkInvariants()
    }

    /// Effects since the last call to `take()`.
    mutating func take() -> [String] {
        defer { pending.removeAll() }
        return pending
    }

    func name(_ id: OperationID) -> String { names[id] ?? id.description }

    func render(_ effect: Effect) -> String? {
        switch effect {
        case let .dispatch(id, attempt, worker, _):
            return "dispatch \(name(id))→\(worker)" + (attempt > 1 ? " #\(attempt)" : "")
        case let .kill(id, attempt, worker, reason):
            return "kill \(name(id))@\(worker)" + (attempt > 1 ? " #\(attempt)" : "") + " \(reason)"
        case let .notify(event):
            var text = "\(name(event.operation)) \(event.state)"
            if let outcome = event.outcome { text += " \(outcome)" }
            if event.isCancelled, event.state != .finished { text += " cancelled" }
            if event.state != .finished, let reason = event.reason { text += " (\(reason))" }
            return text
        case let .jobFinished(job):
            return "\(job) finished"
        case let .journal(record):
            switch record {
            case .submitted(let receipt, _): return "journal submit \(receipt.job)"
            case .cancelled(let ids): return "journal cancel " + ids.map(name).joined(separator: ",")
            case let .queueSettings(queue, max, suspended): return "journal queue \(queue) max \(max) suspended \(suspended)"
            case let .priority(id, priority): return "journal priority \(name(id)) \(priority)"
            case let .dependency(id, on, added): return "journal \(added ? "add" : "remove") \(name(id))→\(name(on))"
            case let .adopted(id, attempt, worker): return "journal adopted \(name(id))@\(worker) #\(attempt)"
            case let .reserved(first, count): return "journal reserve \(first) ×\(count)"
            case .attempt, .retry, .requeue, .finished: return nil
            }
        }
    }

    mutating func join(_ worker: WorkerID, slots: Int = 1, queues: Set<String>? = nil, labels: [String: String] = [:]) throws {
        core.workerJoined(worker, slots: slots, queues: queues, labels: labels, at: time)
        try step()
    }

    /// The worker holding `name` reports it started.
    mutating func start(_ name: String) throws {
        let (attempt, worker) = held[name]!
        let accepted = core.started(id(name), attempt: attempt, worker: worker, at: time)
        #expect(accepted, "start of \(name) accepted")
        try step()
    }

    /// The worker holding `name` reports its attempt ended with `report`.
    mutating func complete(_ name: String, _ report: AttemptReport = .succeeded) throws {
        let (attempt, worker) = held[name]!
        let accepted = core.finished(id(name), attempt: attempt, worker: worker, report, at: time)
        #expect(accepted, "finish of \(name) accepted")
        try step()
    }

    /// Completes every dispatched operation (successfully, unless `report` says otherwise) until nothing
    /// more is dispatched; returns every dispatch of the test so far, in order.
    mutating func runToEnd(_ report: (String) -> AttemptReport = { _ in .succeeded }) throws -> [String] {
        var next = 0
        while next < dispatchOrder.count {
            let name = dispatchOrder[next]
            next += 1
            guard core.operation(id(name))!.state >= .dispatched, core.operation(id(name))!.state < .finished else { continue }
            try start(name)
            try complete(name, report(name))
        }
        return dispatchOrder
    }

    mutating func cancel(_ name: String) throws {
        try core.cancel(id(name), at: time)
        try step()
    }

    mutating func suspend(_ queue: String = "default", _ suspended: Bool = true) throws {
        core.setSuspended(suspended, queue: queue, at: time)
        try step()
    }

    mutating func setMax(_ max: Int, _ queue: String = "default") throws {
        try core.setMaxConcurrent(max, queue: queue, at: time)
        try step()
    }

    mutating func tick(to time: Timestamp) throws {
        self.time = time
        core.tick(at: time)
        try step()
    }

    func state(_ name: String) -> OperationState { core.operation(id(name))!.state }
    func outcome(_ name: String) -> Outcome? { core.operation(id(name))!.outcome }
    func snapshot(_ name: String) -> Scheduler.OperationSnapshot { core.operation(id(name))! }
}
