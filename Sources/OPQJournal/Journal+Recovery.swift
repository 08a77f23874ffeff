import OPQCore

/// What recovery found besides the core's state.
public struct RecoveredState: Sendable {
    /// Entries replayed.
    public var entries = 0
    /// Receipts of submissions that carried an idempotency key, by key.
    public var receipts: [String: SubmissionReceipt] = [:]
    /// When each finished job finished (seconds since 1970), for `opq prune --older-than`.
    public var jobFinishedAt: [JobID: Double] = [:]
    /// What pruning left in the file (tombstoned jobs), and the sizes compaction is decided on.
    var garbage = Garbage()
}

extension Journal {
    /// Replays every entry, oldest first, into `core` (a fresh core that no worker joined yet); see
    /// `Scheduler+Recovery` for how. The effects of the replay are dropped: they happened before.
    /// An entry that cannot be applied is ``JournalError/inconsistent(path:record:problem:)``.
    public func recover(into core: inout Scheduler) throws -> RecoveredState {
        var state = RecoveredState()
        let time: Timestamp = 0
        try forEachSizedEntry { seq, entry, size in
            state.garbage.storedBytes += size
            if case .submitted(let receipt, _, _) = entry { state.garbage.submissionBytes[receipt.job] = size }
            do {
                try Journal.apply(entry, to: &core, state: &state, at: time)
            } catch let error as JournalError {
                throw error
            } catch {
                throw JournalError.inconsistent(path: path, record: seq, problem: "\(entry.summary): \(error)")
            }
            state.entries += 1
            if core.effects.count > 4_096 { _ = core.takeEffects() }
        }
        _ = core.takeEffects()
        garbage = state.garbage
        return state
    }

    private static func apply(_ entry: JournalEntry, to core: inout Scheduler, state: inout RecoveredState, at time: Timestamp) throws {
        switch entry {
        case let .submitted(receipt, _, key):
            let replayed = try core.replay(entry.record!, at: time)
            guard replayed == receipt else { throw ReplayMismatch(recorded: receipt, replayed: replayed ?? receipt) }
            if !key.isEmpty { state.receipts[key] = receipt }
        case let .jobFinished(job, finishedAt):
            state.jobFinishedAt[job] = finishedAt
        case .pruned(let pruned):
            try core.restorePruned(pruned)
        case .forgotten(let job):
            guard let pruned = core.prune(job: job) else { throw RequestError.unknownJob(job) }
            state.jobFinishedAt[job] = nil
            state.garbage.add([pruned])
        case let .prunedTakeUp(reservation, by):
            try core.restorePrunedTakeUp(reservation, by: by, at: time)
        case .cancelled, .queueSettings, .priority, .dependency, .reserved, .attempt, .retry, .requeue, .finished:
            try core.replay(entry.record!, at: time)
        }
    }
}

/// A replayed submission got other ids than the journal recorded: an earlier record already claimed
/// them, which only happens when two coordinators wrote the journal at once.
struct ReplayMismatch: Error, CustomStringConvertible {
    let recorded: SubmissionReceipt
    let replayed: SubmissionReceipt
    var description: String {
        "it was acknowledged as \(recorded.job) but replays as \(replayed.job): an earlier commit already claims "
            + "\(recorded.job), so two coordinators wrote this journal at the same time"
    }
}

extension JournalEntry {
    /// The entry in a few words, for error messages (a submission's operations are not listed).
    var summary: String {
        switch self {
        case let .submitted(receipt, _, key):
            let ids = receipt.operations.first.map { first in
                receipt.operations.count == 1 ? " (\(first))" : " (\(first)…\(receipt.operations.last!))"
            } ?? ""
            return "the submission of \(receipt.job)\(ids)" + (key.isEmpty ? "" : " with idempotency key '\(key)'")
        case .cancelled(let ids):
            return ids.count == 1 ? "the cancel of \(ids[0])" : "a cancel of \(ids.count) operations"
        case let .queueSettings(queue, _, _):
            return "the settings of queue '\(queue)'"
        case let .priority(id, _):
            return "a priority change of \(id)"
        case let .dependency(id, on, added):
            return "\(added ? "a dependency added" : "a dependency removed"): \(id) on \(on)"
        case let .reserved(first, count):
            return "\(count) reservation\(count == 1 ? "" : "s") from \(first)"
        case let .attempt(id, attempt, worker):
            return "attempt \(attempt) of \(id) on worker '\(worker)'"
        case .retry(let id, _):
            return "a retry of \(id)"
        case .requeue(let id):
            return "a requeue of \(id)"
        case let .finished(id, outcome, _):
            return "the finish of \(id) (\(outcome))"
        case .jobFinished(let job, _):
            return "the end of \(job)"
        case .pruned(let pruned):
            return "the pruned \(pruned.job)"
        case .forgotten(let job):
            return "the prune of \(job)"
        case let .prunedTakeUp(reservation, by):
            return "the take-up of \(reservation) by the pruned \(by)"
        }
    }
}
