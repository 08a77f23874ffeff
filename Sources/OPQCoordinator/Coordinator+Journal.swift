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
    /// Set while the journal cannot be written because its disk is full.
    var stall: JournalStall?
}

/// The journal's disk is full: the records of the turns since the last commit wait in memory (in the
/// journal's queue) and are committed as soon as there is room again, without a restart.
///
/// While it lasts (SEMANTICS §10 holds throughout: nothing is acknowledged before it is journaled):
/// - changes from clients (submit, cancel, queue settings, priorities, dependencies, prune) are refused
///   with "the coordinator's state disk is full (PATH): free space; nothing was accepted", before they
///   touch anything; reads (status, list, show, logs, watch, wait) are served from memory as usual;
/// - the replies of the turn whose commit failed are held: they acknowledge changes not journaled yet;
/// - operations already running keep running; their workers' reports are applied in memory, and their
///   finishes are not acknowledged to the workers (`reports_durable` stays behind), so each worker keeps
///   its `Finished` reports in its outbox and sends them again to a restarted coordinator;
/// - no order (dispatch, kill) leaves the coordinator: a dispatch is an attempt that must be journaled
///   first, so nothing new starts until the disk has room again.
/// When a commit succeeds again, the held replies go out, then the orders the core still stands behind.
struct JournalStall {
    /// When the first commit failed (the loop's clock).
    let since: Double
    /// When a commit was last tried.
    var lastAttempt: Double
    /// The replies of the turn whose commit failed.
    var heldReplies: [[[UInt8]]]
}

extension Coordinator {
    /// Takes the state directory's lock, opens its journal and replays it into `core`; `recovered` gets
    /// what else the replay found (receipts, when jobs finished). Throws a ``JournalError`` (never starts
    /// empty over a journal it cannot read).
    static func openState(_ path: String, configuration: CoordinatorConfiguration, core: inout Scheduler,
                          logger: Logger) throws -> (Durability, RecoveredState) {
        let directory = try StateDirectory(path: path)
        let journal = try Journal(path: directory.journalPath, sync: configuration.sync)
        let started = MonotonicClock().now()
        let recovered = try journal.recover(into: &core)
        logger.info("journal replayed", metadata: [
            "state": "\(directory.path)", "records": "\(recovered.entries)", "operations": "\(core.operationTotal)",
            "in.flight": "\(core.recoveringAttempts)", "seconds": "\(MonotonicClock().now() - started)",
        ])
        return (Durability(directory: directory, journal: journal), recovered)
    }

    /// Commits the turn's journal entries; only then may its acknowledgements and dispatches go out.
    /// Reports journaled now are acknowledged to their workers with the next message they are sent.
    /// Returns false while the journal's disk is full (see ``JournalStall``): the entries stay queued and
    /// nothing that depends on them may be sent. Any other write failure is thrown (the coordinator stops).
    @discardableResult
    func commitJournal() throws -> Bool {
        guard let journal = durability?.journal, journal.hasPending else {
            // Nothing left to journal: every report received is durable (a turn of output chunks and starts
            // journals nothing, and the workers' output window waits for this acknowledgement).
            if durability?.stall == nil { state.committed() }
            return true
        }
        let now = clock.now()
        if let stall = durability!.stall, now - stall.lastAttempt < Coordinator.stallRetryInterval,
           !journal.hasRoom(for: journal.pendingBytes) {
            return false
        }
        do {
            let started = clock.now()
            try journal.commit()
            telemetry?.totals.journalCommit.observe(clock.now() - started)
        } catch {
            guard case .diskFull = error else { throw error }
            if durability!.stall == nil {
                logger.error("journal disk full: refusing changes until there is room; running work continues", metadata: [
                    "journal": "\(journal.path)", "pending.bytes": "\(journal.pendingBytes)",
                ])
                durability!.stall = JournalStall(since: now, lastAttempt: now, heldReplies: state.clientOutbox)
                state.clientOutbox.removeAll()
            }
            durability!.stall!.lastAttempt = now
            return false
        }
        if let stall = durability!.stall {
            durability!.stall = nil
            logger.notice("journal writable again: accepting changes", metadata: ["stalled.seconds": "\(now - stall.since)"])
            state.clientOutbox.insert(contentsOf: stall.heldReplies, at: 0)
            dropOrdersTheCoreNoLongerHolds()
        }
        state.committed()
        return true
    }

    /// Seconds between commits tried while the journal's disk looks full (one is tried at once when the
    /// file system reports room, so a change sent after space returns is accepted).
    static let stallRetryInterval = 1.0

    /// Whether orders may be sent: not while the journal's disk is full (they depend on unjournaled records).
    var mayOrder: Bool { durability?.stall == nil }

    /// After a stall, drops the orders that went stale while they waited (their worker was lost or
    /// registered again, the attempt finished or moved on): only what the core still holds goes out.
    private func dropOrdersTheCoreNoLongerHolds() {
        for (worker, items) in state.orders {
            state.orders[worker] = items.filter { order in
                let (id, attempt): (UInt64, UInt32)
                switch order.kind {
                case .dispatch(let dispatch): (id, attempt) = (dispatch.operation, dispatch.attempt)
                case .kill(let kill): (id, attempt) = (kill.operation, kill.attempt)
                case nil: return false
                }
                guard let operation = state.core.operation(OperationID(id)) else { return false }
                return operation.worker == worker && operation.attempt == Int(attempt)
                    && (operation.state == .dispatched || operation.state == .executing)
            }
        }
    }

    /// The refusal of a client's change that the journal cannot take now (nil for reads, and for changes
    /// when it can): while its disk is full, or when it has less free space than the change needs
    /// (`bytes`, the request's size) plus a reserve — refused before it touches anything, so nothing of it
    /// is accepted. Space that came back ends a stall here at once.
    func journalRefusal(of request: Opq_V1_ClientRequest, bytes: Int) throws -> Opq_V1_Error? {
        guard let journal = durability?.journal else { return nil }
        switch request.body {
        case .submit, .cancel, .setQueue, .setPriority, .addDependency, .removeDependency, .prune, .reserve: break
        default: return nil
        }
        if durability!.stall != nil, journal.hasRoom(for: journal.pendingBytes + bytes) { try commitJournal() }
        guard durability!.stall != nil || !journal.hasRoom(for: bytes) else { return nil }
        return diskFullError
    }

    /// What a client is told when a change cannot be journaled.
    var diskFullError: Opq_V1_Error {
        var error = Opq_V1_Error()
        error.code = .internal
        error.message = JournalError.diskFull(path: durability?.journal.path ?? "?").description
        return error
    }

    /// Takes the core's effects and commits what they journal. False while the journal's disk is full.
    @discardableResult
    func absorbAndCommit() throws -> Bool {
        state.absorbEffects()
        for entry in state.journalEntries { durability?.journal.append(entry) }
        state.journalEntries.removeAll(keepingCapacity: true)
        return try commitJournal()
    }

    /// `opq prune`: forgets finished jobs (finished at least `olderThan` seconds ago, if given), in the
    /// core and in the journal, and replies with the jobs pruned and how many operations they held.
    /// A change like any other: the journal gets a tombstone per job (``Journal/forget(_:)``), committed
    /// with the turn before the reply goes out (on a full disk the reply waits, see ``JournalStall``); the
    /// file is compacted only once its garbage is at least half of it, so a prune costs what it removes
    /// and a client sending prunes in a loop cannot starve the others.
    func prune(_ request: Opq_V1_Prune, requestID: UInt64, identity: [UInt8]) throws {
        let cutoff = request.hasOlderThanSeconds ? Date().timeIntervalSince1970 - request.olderThanSeconds : nil
        guard try absorbAndCommit() else { return refusePrune(requestID: requestID, identity: identity) }
        // Waits this turn satisfied are answered now, while what they name still exists: a wait must never
        // be answered with an operation the prune already forgot.
        if state.somethingFinished {
            state.somethingFinished = false
            state.clientOutbox += state.satisfiedWaits()
        }
        // Oldest first, stopping at the first job that finished after the cutoff: a prune walks what it removes.
        let finishedAt = state.jobFinishedAt
        let pruned = state.core.pruneFinished { job in cutoff.map { (finishedAt[job] ?? 0) <= $0 } ?? true }
        durability?.journal.forget(pruned)
        for record in pruned {
            state.jobFinishedAt[record.job] = nil
            for k in record.outcomes.indices {
                state.outputs.remove(OperationID(record.first.rawValue + UInt64(k)))
                state.results.remove(OperationID(record.first.rawValue + UInt64(k)))
                spool.remove(OperationID(record.first.rawValue + UInt64(k)))
                state.events.forgetStory(of: OperationID(record.first.rawValue + UInt64(k)))
            }
        }
        let operations = pruned.reduce(0) { $0 + $1.outcomes.count }
        logger.info("pruned finished jobs", metadata: ["jobs": "\(pruned.count)", "operations": "\(operations)"])
        state.queueToClient(.reply(requestID) {
            $0.pruned.jobs = pruned.map(\.job.rawValue)
            $0.pruned.operations = UInt64(operations)
        }, identity: identity)
        try compactJournalIfDue()
    }

    /// Compacts the journal when its garbage is due (``Journal/compactionIsDue``) and its disk has room
    /// for a compacted copy; on a full disk the garbage waits for a later prune. The turn's records are
    /// committed first, through ``commitJournal()`` (which acknowledges the reports it made durable).
    func compactJournalIfDue() throws {
        guard let journal = durability?.journal, journal.compactionIsDue, try commitJournal(),
              journal.hasRoom(for: journal.fileBytes) else { return }
        let started = clock.now()
        let garbage = journal.garbageOperations
        do {
            try journal.compact()
        } catch {
            guard case .diskFull = error else { throw error }
            return
        }
        logger.info("journal compacted", metadata: [
            "operations.dropped": "\(garbage)", "seconds": "\(clock.now() - started)", "bytes": "\(journal.fileBytes)",
        ])
    }

    private func refusePrune(requestID: UInt64, identity: [UInt8]) {
        state.queueToClient(.reply(requestID, error: diskFullError), identity: identity)
    }
}
