import DequeModule
import Foundation
import OPQCore

/// Hands ``ClusterSnapshot``s from the coordinator's loop to readers on other threads. The loop swaps in
/// a new snapshot under the lock (a reference assignment); readers copy the current one out under the
/// same lock. Nothing else is ever done under it, so a reader never holds up dispatch.
// @unchecked Sendable: `current`, `requested` and `details` are read and changed only under `lock`.
public final class SnapshotPublisher: @unchecked Sendable {
    /// Seconds between two snapshots, at most (while something changed; once a second otherwise).
    public let interval: Double
    private let lock = NSLock()
    private var current: ClusterSnapshot?

    /// A publisher that takes a snapshot at most every `interval` seconds.
    public init(interval: Double = 0.25) {
        self.interval = interval
    }

    /// The newest snapshot, or nil before the loop published one.
    public var latest: ClusterSnapshot? {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func publish(_ snapshot: ClusterSnapshot, details new: [DetailRequest: Detail] = [:]) {
        lock.lock()
        current = snapshot
        for (request, detail) in new { details[request] = (snapshot.sequence, detail) }
        // Answers are for the readers waiting now: older ones (a few seconds) go.
        if !details.isEmpty { details = details.filter { $0.value.sequence + Self.detailsKept > snapshot.sequence } }
        lock.unlock()
    }

    /// Snapshots an answer to a ``DetailRequest`` is kept for.
    static let detailsKept: UInt64 = 40
    private var requested = Set<DetailRequest>()
    private var details: [DetailRequest: (sequence: UInt64, detail: Detail)] = [:]

    /// Asks the loop to build `request` with its next snapshot (within about a second, or the publishing
    /// interval while the cluster is busy) and waits for it: nil when none came within `seconds`.
    public func detail(_ request: DetailRequest, within seconds: Double) async -> Detail? {
        let asked = ask(request)
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        while ContinuousClock.now < deadline {
            if let answer = answer(to: request, after: asked) { return answer }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Records `request`; returns the sequence of the snapshot current when it was asked.
    private func ask(_ request: DetailRequest) -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        requested.insert(request)
        return current?.sequence ?? 0
    }

    /// The answer to `request` built after snapshot `asked`, if there is one yet.
    private func answer(to request: DetailRequest, after asked: UInt64) -> Detail? {
        lock.lock()
        defer { lock.unlock() }
        return details[request].flatMap { $0.sequence > asked ? $0.detail : nil }
    }

    /// Whether a reader waits for a detail.
    var hasRequests: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !requested.isEmpty
    }

    /// Details built per snapshot, at most: many readers asking for big graphs cannot stall the loop
    /// (the others wait for the next snapshots).
    static let detailsPerSnapshot = 16

    /// Up to ``detailsPerSnapshot`` of the requests waiting, now taken by the loop.
    func takeRequests() -> [DetailRequest] {
        lock.lock()
        defer { lock.unlock() }
        let taken = Array(requested.prefix(Self.detailsPerSnapshot))
        requested.subtract(taken)
        return taken
    }
}

/// What the loop keeps for metrics and the dashboard between snapshots. It reads the numbered event log
/// (every transition the core announced) once per turn, so it needs no hook in the core or the effects.
struct Telemetry {
    /// Bytes of each output tail a failure shows.
    static let outputTailBytes = 2_048
    /// Ended attempts kept for the task stream.
    static let maxEndedTasks = 600
    /// Failures kept.
    static let maxFailures = 50
    /// Finished jobs kept besides the unfinished ones.
    static let maxFinishedJobs = 20

    /// An attempt as the loop records it: nothing looked up or copied per operation beyond the event's
    /// own fields (names are looked up for the few kept attempts when a snapshot is built).
    struct Attempt {
        var operation: OperationID
        var job: JobID
        var worker: WorkerID
        var lane: Int
        var attempt: Int
        var readyAt: Double?
        var start: Double
        var end: Double?
        /// A string literal (never allocated): `running`, `succeeded`, `failed`, `cancelled`, `retry`, `lost`.
        var outcome: String
        var reason: FinishReason?
    }

    struct TrackedJob {
        var firstSeen: Double
        var finishedAt: Double?
    }

    let publisher: SnapshotPublisher
    let startedAt: Double
    /// The last event read from the event log.
    var lastSequence: UInt64
    var totals = Totals()
    /// When the last snapshot was published, and the message count then.
    var lastPublish = 0.0
    var messagesAtLastPublish: UInt64 = 0
    /// Something changed since the last snapshot.
    var isDirty = true
    var published: UInt64 = 0
    /// The time of the last operation event read.
    var lastEventTime = 0.0
    /// Finishes by queue, indexed by `Outcome.rawValue`.
    var finishedByQueue: [String: [UInt64]] = [:]
    /// When each ready operation became ready, indexed by the operation's dense storage index (its id − 1,
    /// as in the core); `.nan` when it is not ready. A flat array: one store and one load per attempt, no
    /// hashing (the per-operation dictionary it replaces cost the loop a few percent of its throughput).
    var readyAt: [Double] = []
    /// Executing attempts by operation.
    var running: [OperationID: Attempt] = [:]
    /// Busy lanes by worker.
    var lanes: [WorkerID: [Bool]] = [:]
    var ended = Deque<Attempt>()
    var failures = Deque<FailureSummary>()
    var jobs: [JobID: TrackedJob] = [:]
    var finishedJobs = Deque<JobID>()

    /// When the loop should wake up to publish, if something waits to be published.
    var nextPublish: Double? { isDirty ? lastPublish + publisher.interval : nil }
}

extension Coordinator {
    /// Starts publishing ``ClusterSnapshot``s to `publisher` from the loop. Call before ``run()``.
    public func publishSnapshots(to publisher: SnapshotPublisher) {
        let now = clock.now()
        var telemetry = Telemetry(publisher: publisher, startedAt: now, lastSequence: state.events.lastSequence)
        for number in 0..<state.core.jobCount {
            let job = JobID(UInt64(number + 1))
            if state.core.progress(of: job)?.isFinished == false { telemetry.jobs[job] = .init(firstSeen: now) }
        }
        self.telemetry = telemetry
        publishSnapshot(now: now)
    }

    /// Reads the turn's events and publishes a snapshot when one is due. Called at the end of each turn.
    ///
    /// The telemetry is taken out of `self` while the events are read: a local value is mutated in place
    /// (its dictionaries uniquely referenced), with no exclusivity check or optional unwrap per field access,
    /// and the events are read where the log keeps them, not copied.
    func observeTurn(now: Double) {
        guard var observed = telemetry else { return }
        let started = clock.now()  // `now` is the turn's start
        if state.events.lastSequence != observed.lastSequence {
            telemetry = nil  // `observed` is now the only reference to its buffers
            if let new = state.events.events(after: observed.lastSequence) {
                for event in new { observed.observe(event, core: state.core) }
            } else {
                observed.totals.eventsMissed &+= state.events.lastSequence - observed.lastSequence
            }
            observed.lastSequence = state.events.lastSequence
            observed.isDirty = true
        }
        telemetry = observed
        defer { telemetry!.totals.telemetrySeconds += max(0, clock.now() - started) }
        let since = now - observed.lastPublish
        if since >= observed.publisher.interval && (observed.isDirty || since >= 1 || observed.publisher.hasRequests) {
            publishSnapshot(now: now)
        }
    }

    private func publishSnapshot(now: Double) {
        let started = clock.now()
        defer { telemetry!.totals.snapshotBuild.observe(max(0, clock.now() - started)) }
        let elapsed = now - telemetry!.lastPublish
        let messages = telemetry!.totals.messagesReceived
        if telemetry!.lastPublish > 0 && elapsed > 0 {
            let rate = Double(messages - telemetry!.messagesAtLastPublish) / elapsed
            telemetry!.totals.messagesPerSecond = rate
        }
        telemetry!.totals.workersLost = UInt64(state.core.workersLost)
        telemetry!.totals.jobs = UInt64(state.core.jobCount)
        telemetry!.published += 1
        let snapshot = ClusterSnapshot(
            time: now, startedAt: telemetry!.startedAt, sequence: telemetry!.published,
            workersEndpoint: workersEndpoint, clientsEndpoint: clientsEndpoint,
            jobs: jobSummaries(now: now), queues: queueSummaries(), workers: workerSummaries(),
            tasks: (telemetry!.ended + telemetry!.running.values.sorted { $0.start < $1.start }).map(taskBar),
            failures: failureSummaries(), totals: telemetry!.totals)
        let details = Dictionary(uniqueKeysWithValues: telemetry!.publisher.takeRequests().map { ($0, detail(for: $0, now: now)) })
        telemetry!.publisher.publish(snapshot, details: details)
        telemetry!.lastPublish = now
        telemetry!.messagesAtLastPublish = messages
        telemetry!.isDirty = false
        let live = Set(state.core.workerSnapshots.map(\.id))
        telemetry!.lanes = telemetry!.lanes.filter { live.contains($0.key) }
    }

    /// The lowest free lane of a worker, now taken.
    static func takeLane(_ lanes: inout [Bool]) -> Int {
        if let free = lanes.firstIndex(of: false) {
            lanes[free] = true
            return free
        }
        lanes.append(true)
        return lanes.count - 1
    }

    private func taskBar(_ attempt: Telemetry.Attempt) -> TaskBar {
        TaskBar(operation: attempt.operation.rawValue, name: state.core.name(of: attempt.operation) ?? "", job: attempt.job.rawValue,
                queue: state.core.queueName(of: attempt.operation) ?? "", worker: attempt.worker.name, lane: attempt.lane,
                attempt: attempt.attempt, readyAt: attempt.readyAt, start: attempt.start, end: attempt.end,
                outcome: attempt.outcome, reason: attempt.reason?.description)
    }

    private func jobSummaries(now: Double) -> [JobSummary] {
        telemetry!.jobs.sorted { $0.key < $1.key }.compactMap { id, tracked in
            guard let progress = state.core.progress(of: id) else { return nil }
            let counts = StateCounts(progress.counts)
            let elapsed = (tracked.finishedAt ?? now) - tracked.firstSeen
            let eta: Double? = progress.isFinished ? 0
                : counts.finished > 0 && elapsed > 0 ? Double(counts.unfinished) / (Double(counts.finished) / elapsed) : nil
            return JobSummary(
                id: id.rawValue, name: state.core.name(of: progress.firstOperation) ?? "", operations: progress.operationCount,
                counts: counts, isFinished: progress.isFinished, firstSeen: tracked.firstSeen,
                finishedAt: tracked.finishedAt, etaSeconds: eta)
        }
    }

    private func queueSummaries() -> [QueueSummary] {
        state.core.queueNames.compactMap { name in
            guard let queue = state.core.queue(name) else { return nil }
            let finished = telemetry!.finishedByQueue[name] ?? [0, 0, 0]
            return QueueSummary(
                name: name, maxConcurrent: queue.maxConcurrent, isSuspended: queue.isSuspended,
                counts: StateCounts(queue.counts), barriers: queue.barriers,
                finishedTotal: Dictionary(uniqueKeysWithValues: Outcome.allCases.map { ($0.description, finished[Int($0.rawValue)]) }))
        }
    }

    private func workerSummaries() -> [WorkerSummary] {
        state.core.workerSnapshots.map { worker in
            let registration = state.sessions[worker.id]?.registration
            return WorkerSummary(
                id: worker.id.name, slots: worker.slots, used: worker.operations.count, labels: worker.labels,
                queues: worker.queues.map { $0.sorted() }, lastSeen: worker.lastSeen,
                host: registration?.host ?? "", pid: Int64(registration?.pid ?? 0),
                handlers: registration?.handlers ?? [], operations: worker.operations.map(\.rawValue))
        }
    }

    private func failureSummaries() -> [FailureSummary] {
        telemetry!.failures.map { failure in
            var failure = failure
            if let output = state.outputs[OperationID(failure.operation)] {
                failure.stdoutTail = Coordinator.tail(output.stdout)
                failure.stderrTail = Coordinator.tail(output.stderr)
                failure.message = output.errorMessage
            }
            return failure
        }
    }

    /// The last ``Telemetry/outputTailBytes`` bytes of `bytes` as text (invalid UTF-8 repaired).
    static func tail(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.suffix(Telemetry.outputTailBytes), as: UTF8.self)
    }
}

extension Telemetry {
    /// Records one event of the log.
    mutating func observe(_ event: LoggedEvent, core: Scheduler) {
        switch event.kind {
        case .operation(let change):
            observe(change, core: core)
        case .jobFinished(let job):
            // A jobFinished event carries no time; its last operation's event, just before it, does.
            jobs[job, default: .init(firstSeen: startedAt)].finishedAt = lastEventTime
            finishedJobs.append(job)
            if finishedJobs.count > Telemetry.maxFinishedJobs {
                let oldest = finishedJobs.removeFirst()
                jobs[oldest] = nil
            }
        case .progress:
            break
        }
    }

    private mutating func observe(_ change: OperationEvent, core: Scheduler) {
        let id = change.operation
        lastEventTime = change.time
        // A job first shows up in its submission's events (attempt 0): no lookup for the later ones.
        if change.attempt == 0, jobs[change.job] == nil { jobs[change.job] = .init(firstSeen: change.time) }
        switch change.state {
        case .pending:
            if change.retryAt != nil { totals.retries &+= 1 }
            endTask(id, at: change.time, outcome: "retry", reason: change.reason)
        case .ready:
            setReadyAt(id, change.time)
            if change.reason == .lostWorker { totals.attemptsLost &+= 1 }
            endTask(id, at: change.time, outcome: change.reason == .lostWorker ? "lost" : "retry", reason: change.reason)
        case .dispatched:
            break
        case .executing:
            let readyAt = takeReadyAt(id)
            if let readyAt { totals.dispatchLatency.observe(max(0, change.time - readyAt)) }
            let worker = change.worker ?? WorkerID("")
            let lane = Coordinator.takeLane(&lanes[worker, default: []])
            running[id] = Attempt(
                operation: id, job: change.job, worker: worker, lane: lane, attempt: change.attempt,
                readyAt: readyAt, start: change.time, end: nil, outcome: "running", reason: nil)
        case .finished:
            let outcome = change.outcome ?? .succeeded
            let queue = core.queueName(of: id) ?? ""
            finishedByQueue[queue, default: [0, 0, 0]][Int(outcome.rawValue)] &+= 1
            // An attempt that ran left `readyAt` when it started; only one finished without running is in it.
            if !endTask(id, at: change.time, outcome: outcome.description, reason: change.reason) { _ = takeReadyAt(id) }
            guard outcome == .failed else { return }
            failures.append(FailureSummary(
                operation: id.rawValue, name: core.name(of: id) ?? "", job: change.job.rawValue, queue: queue,
                worker: change.worker?.name, attempt: change.attempt, time: change.time,
                reason: change.reason?.description ?? "", exitCode: change.exitCode, signal: change.signal,
                stdoutTail: "", stderrTail: "", message: ""))
            if failures.count > Telemetry.maxFailures { failures.removeFirst() }
        }
    }

    /// Notes that `id` became ready at `time`.
    /// - Complexity: amortized O(1) (the array grows to the highest id seen).
    private mutating func setReadyAt(_ id: OperationID, _ time: Double) {
        guard let index = id.storageIndex else { return }
        if index >= readyAt.count { readyAt.append(contentsOf: repeatElement(.nan, count: index + 1 - readyAt.count)) }
        readyAt[index] = time
    }

    /// When `id` became ready, now forgotten; nil when it is not ready.
    private mutating func takeReadyAt(_ id: OperationID) -> Double? {
        guard let index = id.storageIndex, index < readyAt.count, !readyAt[index].isNaN else { return nil }
        defer { readyAt[index] = .nan }
        return readyAt[index]
    }

    /// Ends the running bar of `id`, if any, and frees its lane. Returns whether there was one.
    @discardableResult
    private mutating func endTask(_ id: OperationID, at time: Double, outcome: String, reason: FinishReason?) -> Bool {
        guard var bar = running.removeValue(forKey: id) else { return false }
        bar.end = time
        bar.outcome = outcome
        bar.reason = reason
        if let worker = lanes.index(forKey: bar.worker), bar.lane < lanes.values[worker].count {
            lanes.values[worker][bar.lane] = false  // one hash lookup per ended attempt
        }
        ended.append(bar)
        if ended.count > Telemetry.maxEndedTasks { ended.removeFirst() }
        return true
    }
}

private extension OperationID {
    /// The operation's position in dense storage (its 1-based id − 1); nil for id 0.
    var storageIndex: Int? { rawValue >= 1 ? Int(rawValue - 1) : nil }
}
