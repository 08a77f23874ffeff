import Foundation
import Logging
import OPQCore
import OPQJournal
import OPQWire

/// The coordinator's durable state (SEMANTICS §10): the state directory's lock, the journal, and what
/// recovery left to reconcile.
struct Durability {
    /// Holds the lock for the life of the coordinator.
    let directory: StateDirectory
    let journal: Journal
    /// Idempotency keys of this turn's submissions, by job, until their `.submitted` record is journaled.
    var pendingKeys: [JobID: String] = [:]
    /// When each finished job finished (seconds since 1970), for `prune --older-than`.
    var jobFinishedAt: [JobID: Double] = [:]
    /// While attempts recovered from the journal wait for their workers: when they get a new attempt.
    var recoveryDeadline: Double?
}

extension Coordinator {
    /// Takes the state directory's lock, opens its journal and replays it into `core`. Throws a
    /// ``JournalError`` (never starts empty over a journal it cannot read).
    static func openState(_ path: String, configuration: CoordinatorConfiguration, core: inout Scheduler,
                          outputs: inout OutputStore, receipts: inout [String: SubmissionReceipt], logger: Logger) throws -> Durability {
        let directory = try StateDirectory(path: path)
        let journal = try Journal(path: directory.journalPath, sync: configuration.sync)
        let started = MonotonicClock().now()
        let recovered = try journal.recover(into: &core)
        try journal.forEachOutput { id, output in outputs.record(output, for: id) }
        receipts = recovered.receipts
        logger.info("journal replayed", metadata: [
            "state": "\(directory.path)", "records": "\(recovered.entries)", "operations": "\(core.operationTotal)",
            "in.flight": "\(core.recoveringAttempts)", "seconds": "\(MonotonicClock().now() - started)",
        ])
        return Durability(directory: directory, journal: journal, jobFinishedAt: recovered.jobFinishedAt)
    }

    /// Journals what one effect changed (called for every effect, in order, by `absorbEffects`).
    func journal(_ effect: Effect) {
        guard durability != nil else { return }
        var key = ""
        var time = 0.0
        switch effect {
        case .journal(.submitted(let receipt, _)):
            key = durability!.pendingKeys.removeValue(forKey: receipt.job) ?? ""
        case .jobFinished(let job):
            time = Date().timeIntervalSince1970
            durability!.jobFinishedAt[job] = time
        case .notify(let event) where event.state == .executing:
            return  // the hot path: started reports are not journaled
        default:
            break
        }
        guard let entry = JournalEntry(effect, key: key, time: time) else { return }
        durability!.journal.append(entry)
    }

    /// Commits the turn's journal entries; only then may its acknowledgements and dispatches go out.
    /// Reports journaled now are acknowledged to their workers with the next message they are sent.
    func commitJournal() throws {
        guard let durability, durability.journal.hasPending else { return }
        let started = clock.now()
        try durability.journal.commit()
        telemetry?.totals.journalCommit.observe(clock.now() - started)
        for (id, session) in sessions where session.reportsDurable < session.reportsReceived {
            sessions[id]!.reportsDurable = session.reportsReceived
        }
    }

    /// Takes the core's effects and commits what they journal.
    func absorbAndCommit() throws {
        absorbEffects()
        try commitJournal()
        if durability == nil {
            for (id, session) in sessions where session.reportsDurable < session.reportsReceived {
                sessions[id]!.reportsDurable = session.reportsReceived
            }
        }
    }

    /// Starts the grace period for attempts recovered from the journal (their workers reconnect and say
    /// what they still hold); called once when the loop starts.
    func startRecoveryGrace(now: Double) {
        guard durability != nil, core.recoveringAttempts > 0 else { return }
        durability!.recoveryDeadline = now + configuration.recoveryGrace
        logger.info("waiting for workers to report recovered attempts", metadata: [
            "attempts": "\(core.recoveringAttempts)", "grace.seconds": "\(configuration.recoveryGrace)",
        ])
    }

    /// Ends the grace period when it is over, or as soon as every recovered attempt was reconciled.
    func checkRecoveryGrace(now: Double) {
        guard let deadline = durability?.recoveryDeadline else { return }
        let left = core.recoveringAttempts
        guard left == 0 || now >= deadline else { return }
        if left > 0 {
            logger.warning("recovered attempts not reported by their workers get a new attempt", metadata: ["attempts": "\(left)"])
        }
        core.endRecovery(at: now)
        durability!.recoveryDeadline = nil
    }

    /// `opq prune`: forgets finished jobs (finished at least `olderThan` seconds ago, if given), in the
    /// core and in the journal. Returns the jobs pruned and how many operations they held.
    func prune(olderThan: Double?) throws -> (jobs: [JobID], operations: Int) {
        let cutoff = olderThan.map { Date().timeIntervalSince1970 - $0 }
        var pruned: [Scheduler.PrunedJob] = []
        for number in 1...max(1, UInt64(core.jobCount)) where number <= UInt64(core.jobCount) {
            let job = JobID(number)
            guard core.isFinished(job: job) == true else { continue }
            if let cutoff, (durability?.jobFinishedAt[job] ?? 0) > cutoff { continue }
            if let record = core.prune(job: job) { pruned.append(record) }
        }
        for record in pruned {
            durability?.jobFinishedAt[record.job] = nil
            for k in record.outcomes.indices { outputs.remove(OperationID(record.first.rawValue + UInt64(k))) }
        }
        try absorbAndCommit()
        try durability?.journal.prune(pruned)
        return (pruned.map(\.job), pruned.reduce(0) { $0 + $1.outcomes.count })
    }
}
