import OPQCore

/// Replay against the live core (issue 12): at random points of a seeded workload, the durable records
/// the core emitted so far are replayed into a fresh core through ``Scheduler/replay(_:at:)`` (the path
/// the journal takes after a crash), and the result must agree with the live core.
///
/// What a replay cannot know is left out of the comparison, on purpose: whether an unfinished operation
/// that no worker holds is `pending` or `ready` (a retry's backoff is not journaled: a replayed retry
/// waits a fresh one), and `executing` versus `dispatched` (starts are not journaled: a recovered attempt
/// waits for its worker to say). Everything else must be equal: ids, outcomes, `isCancelled`, attempts,
/// which worker holds each attempt, priorities, dependencies, queue settings, finished jobs.
extension WorkloadRun {
    /// Whether the replay check runs after this step: about one step in 24, chosen by the seed.
    var replayIsDue: Bool {
        var mixer = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(step))
        return mixer.next() % 24 == 0
    }

    /// Replays `records` into a fresh core and compares it with the live one; returns a disagreement.
    func replayAgrees() -> String? {
        var replayed = Scheduler(configuration: core.configuration)
        for (k, record) in records.enumerated() {
            do {
                try replayed.replay(record, at: now)
            } catch {
                return "replay of record \(k) (\(record)) refused: \(error)"
            }
        }
        do { try replayed.checkInvariants() } catch { return "replayed core's invariants: \(error)" }
        guard replayed.operationTotal == core.operationTotal, replayed.jobCount == core.jobCount else {
            return "replay has \(replayed.operationTotal) operations in \(replayed.jobCount) jobs, live \(core.operationTotal) in \(core.jobCount)"
        }
        for raw in 0..<UInt64(core.operationTotal) {
            let id = OperationID(raw + 1)
            guard let live = core.operation(id), let again = replayed.operation(id) else { return "\(id) missing" }
            if Self.durable(live) != Self.durable(again) {
                return "\(id) after replaying \(records.count) records: \(Self.durable(again)), live \(Self.durable(live))"
            }
        }
        for number in 0...UInt64(model.handedOut) + 1 {
            let reservation = OperationID.reservation(number)
            if replayed.reservedDependants(of: reservation) != core.reservedDependants(of: reservation) {
                return "\(reservation): replayed \(replayed.reservedDependants(of: reservation) as Any), live \(core.reservedDependants(of: reservation) as Any)"
            }
        }
        guard replayed.queueNames == core.queueNames else { return "replayed queues \(replayed.queueNames), live \(core.queueNames)" }
        for name in core.queueNames {
            let live = core.queue(name)!, again = replayed.queue(name)!
            if live.maxConcurrent != again.maxConcurrent || live.isSuspended != again.isSuspended {
                return "queue '\(name)': replayed max \(again.maxConcurrent) suspended \(again.isSuspended), live \(live.maxConcurrent) \(live.isSuspended)"
            }
        }
        for raw in 0..<UInt64(core.jobCount) where core.job(JobID(raw + 1))?.isFinished != replayed.job(JobID(raw + 1))?.isFinished {
            return "job-\(raw + 1): replayed finished \(replayed.job(JobID(raw + 1))?.isFinished as Any), live \(core.job(JobID(raw + 1))?.isFinished as Any)"
        }
        return nil
    }

    /// What the journal keeps of one operation, in words.
    static func durable(_ s: Scheduler.OperationSnapshot) -> String {
        let held = s.state == .dispatched || s.state == .executing
        let state = s.state == .finished ? "finished \(s.outcome.map(\.description) ?? "-")" : held ? "held by \(s.worker?.name ?? "?")" : "waiting"
        return "\(state) cancelled=\(s.isCancelled) attempt \(s.attempt) \(s.priority) deps \(s.dependencies.map(\.rawValue))"
    }
}
