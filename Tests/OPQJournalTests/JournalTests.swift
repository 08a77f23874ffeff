import Foundation
import OPQCore
@testable import OPQJournal
import Testing

/// A scratch state directory, removed by ``remove()``.
struct ScratchState {
    let path: String
    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("opq-journal-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    var journalPath: String { path + "/journal.sqlite" }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A core whose effects are journaled as the coordinator journals them, one commit per step.
struct JournaledCore {
    var core = Scheduler()
    let journal: Journal
    var time: Timestamp = 1

    mutating func step(_ body: (inout Scheduler, Timestamp) throws -> Void) throws {
        time += 1
        try body(&core, time)
        for effect in core.takeEffects() {
            if let entry = JournalEntry(effect, time: 1_000 + time) { journal.append(entry) }
        }
        try journal.commit()
    }
}

/// What recovery must reproduce of one operation. An attempt in flight is compared as "in flight"
/// (dispatched or executing), since a recovered one waits for its worker to say which.
struct Observed: Equatable, CustomStringConvertible {
    var state: String
    var outcome: Outcome?
    var attempt: Int
    var isCancelled: Bool
    var priority: QueuePriority
    var dependencies: [OperationID]

    init(_ snapshot: Scheduler.OperationSnapshot) {
        state = snapshot.state == .dispatched || snapshot.state == .executing ? "in flight" : "\(snapshot.state)"
        outcome = snapshot.outcome
        attempt = snapshot.attempt
        isCancelled = snapshot.isCancelled
        priority = snapshot.priority
        dependencies = snapshot.dependencies
    }

    var description: String { "\(state) \(outcome.map { "\($0)" } ?? "-") #\(attempt)\(isCancelled ? " cancelled" : "") \(priority) \(dependencies)" }
}

@Suite struct JournalTests {
    func command(_ name: String) -> Work { .command(Command(["/bin/echo", name])) }

    @Test func replayingTheJournalRebuildsQueuesGraphOutcomesAndAttempts() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        var run = JournaledCore(journal: try Journal(path: scratch.journalPath))
        var receipt: SubmissionReceipt!
        try run.step { core, now in
            receipt = try core.submit(Submission([
                OperationSpec(name: "a", work: command("a")),
                OperationSpec(name: "b", work: command("b"), dependencies: [.name("a")], retries: 2),
                OperationSpec(name: "c", work: command("c"), dependencies: [.name("b")], requires: .success),
                OperationSpec(name: "d", work: command("d")),
                OperationSpec(name: "e", queue: "held", work: command("e")),
                OperationSpec(name: "f", work: command("f"), dependencies: [.name("d")]),
                OperationSpec(name: "g", work: .empty, dependencies: [.name("a")]),
                OperationSpec(name: "h", work: command("h")),
            ], queueSettings: [("held", QueueSettings(isSuspended: true))]), at: now)
        }
        let id = { (name: String) in receipt.operations[Int(name.unicodeScalars.first!.value - 97)] }
        try run.step { core, now in core.workerJoined("w1", slots: 2, at: now) }  // a, d
        try run.step { core, now in core.started(id("a"), attempt: 1, worker: "w1", at: now) }
        try run.step { core, now in core.finished(id("a"), attempt: 1, worker: "w1", AttemptReport(.succeeded), at: now) }  // b
        try run.step { core, now in core.finished(id("b"), attempt: 1, worker: "w1", AttemptReport(.failed, reason: .exitStatus, exitCode: 1), at: now) }
        try run.step { core, now in try core.setPriority(.veryHigh, of: id("h"), at: now) }
        try run.step { core, now in core.workerJoined("w2", slots: 1, at: now) }
        try run.step { core, now in core.workerLost("w1", at: now) }  // d requeued
        try run.step { core, now in try core.cancel(id("f"), at: now) }
        try run.step { core, now in try core.addDependency(id("h"), on: id("e"), at: now) }
        try run.step { core, now in core.tick(at: now + 10) }  // b's retry is due
        try run.core.checkInvariants()

        let journal = run.journal  // one connection holds the journal's lock: the replay reads through it
        var recovered = Scheduler()
        let state = try journal.recover(into: &recovered)
        try recovered.checkInvariants()
        #expect(state.entries > 10)
        recovered.tick(at: 1_000)  // the coordinator's first turn: retries whose backoff passed are due
        try recovered.checkInvariants()
        for operation in receipt.operations {
            let original = try #require(run.core.operation(operation))
            let replayed = try #require(recovered.operation(operation))
            #expect(Observed(replayed) == Observed(original), "\(original.name)")
        }
        #expect(recovered.queue("held")?.isSuspended == true)
        #expect(recovered.job(receipt.job)?.counts == run.core.job(receipt.job)?.counts)
        // What was in flight waits for its worker (w2 held one attempt); w1 was lost, so nothing is its.
        #expect(recovered.recoveringAttempts == run.core.workerSnapshots.reduce(0) { $0 + $1.operations.count })
    }

    @Test func edgesAddedWithASubmissionAndACancelSeenWhileRunningSurviveAReplay() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        var run = JournaledCore(journal: try Journal(path: scratch.journalPath))
        var ids: [OperationID] = []
        try run.step { core, now in
            ids += try core.submit(Submission([OperationSpec(name: "waiting", queue: "held", work: command("w"))],
                                              queueSettings: [("held", QueueSettings(isSuspended: true))]), at: now).operations
        }
        try run.step { core, now in
            ids += try core.submit(Submission([OperationSpec(name: "new", queue: "held", work: command("n"), dependants: [ids[0]])]), at: now).operations
        }
        try run.step { core, now in core.workerJoined("w1", slots: 1, at: now) }
        try run.step { core, now in ids += try core.submit(Submission([OperationSpec(name: "running", work: command("r"))]), at: now).operations }
        try run.step { core, now in try core.cancel(ids[2], at: now) }
        #expect(run.core.operation(ids[0])?.dependencies == [ids[1]])

        var recovered = Scheduler()
        _ = try run.journal.recover(into: &recovered)
        try recovered.checkInvariants()
        for id in ids {
            let original = try #require(run.core.operation(id))
            let replayed = try #require(recovered.operation(id))
            #expect(Observed(replayed) == Observed(original), "\(original.name)")
        }
    }

    @Test func aRecoveredAttemptStaysWithItsWorkerOrGetsANewAttempt() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        var run = JournaledCore(journal: try Journal(path: scratch.journalPath))
        var receipt: SubmissionReceipt!
        try run.step { core, now in
            receipt = try core.submit(Submission([OperationSpec(name: "kept", work: command("kept")),
                                                  OperationSpec(name: "gone", work: command("gone"))]), at: now)
        }
        try run.step { core, now in core.workerJoined("w1", slots: 2, at: now) }
        let kept = receipt.operations[0], gone = receipt.operations[1]

        var recovered = Scheduler()
        _ = try run.journal.recover(into: &recovered)
        #expect(recovered.recoveringAttempts == 2)
        recovered.workerJoined("w1", slots: 2, holding: [.init(kept, attempt: 1)], at: 100)
        try recovered.checkInvariants()
        #expect(recovered.recoveringAttempts == 0)
        #expect(recovered.operation(kept)?.attempt == 1 && recovered.operation(kept)?.worker == "w1")
        // The attempt w1 no longer holds went back to ready and was dispatched again as attempt 2.
        #expect(recovered.operation(gone)?.attempt == 2)
        #expect(recovered.takeEffects().contains { if case .dispatch(gone, 2, "w1", _) = $0 { true } else { false } })
    }

    @Test func theGracePeriodEndingGivesUnreportedAttemptsANewAttempt() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        var run = JournaledCore(journal: try Journal(path: scratch.journalPath))
        var receipt: SubmissionReceipt!
        try run.step { core, now in receipt = try core.submit(Submission([OperationSpec(name: "x", work: command("x"))]), at: now) }
        try run.step { core, now in core.workerJoined("w1", slots: 1, at: now) }
        try run.step { core, now in try core.cancel(receipt.operations[0], at: now) }  // a kill was due

        var recovered = Scheduler()
        _ = try run.journal.recover(into: &recovered)
        recovered.endRecovery(at: 50)
        try recovered.checkInvariants()
        // Cancelled while in flight and never reported again: it finishes cancelled, it does not run.
        #expect(recovered.operation(receipt.operations[0])?.outcome == .cancelled)
    }

    @Test func idempotencyKeysAndPrunedJobsSurviveAReplay() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let journal = try Journal(path: scratch.journalPath)
        var run = JournaledCore(journal: journal)
        var first: SubmissionReceipt!
        var second: SubmissionReceipt!
        try run.step { core, now in first = try core.submit(Submission([OperationSpec(name: "a"), OperationSpec(name: "b")]), at: now) }
        try run.step { core, now in
            second = try core.submit(Submission([OperationSpec(name: "c", work: command("c"), dependencies: [.id(first.operations[1])])]), at: now)
            core.takeEffects().forEach { effect in
                if let entry = JournalEntry(effect, key: "key-2", time: 5) { journal.append(entry) }
            }
        }
        let record = run.core.prune(job: first.job)
        let pruned = try #require(record)
        try journal.prune([pruned])

        var recovered = Scheduler()
        let state = try journal.recover(into: &recovered)
        try recovered.checkInvariants()
        #expect(state.receipts == ["key-2": second])
        #expect(recovered.job(first.job) == nil && recovered.operation(first.operations[0]) == nil)
        #expect(recovered.operation(second.operations[0])?.state == .ready)
        let third = try recovered.submit(Submission([OperationSpec(name: "d")]), at: 10)
        #expect(third.job.rawValue == second.job.rawValue + 1)
    }

    /// A job that took reservations up is pruned and the journal compacted: its submission (which carried
    /// the take-ups) becomes a tombstone, yet the operations that waited on those reservations in other
    /// jobs do not wait on them again after a replay — they stay as they were, on the outcome of the
    /// operation that took each up (a success releases, a failure cancels a `requires: success` one).
    @Test func compactingAPrunedJobKeepsTheReservationsItTookUp() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let journal = try Journal(path: scratch.journalPath)
        var run = JournaledCore(journal: journal)
        var reservations: [OperationID] = []
        try run.step { core, now in reservations = try core.reserve(2, at: now) }
        var waiting: SubmissionReceipt!
        try run.step { core, now in
            // In a held queue: they stay unfinished once released, never dispatched.
            waiting = try core.submit(Submission([
                OperationSpec(name: "after ok", queue: "held", work: command("1"), dependencies: [.id(reservations[0])], requires: .success),
                OperationSpec(name: "after failed", queue: "held", work: command("2"), dependencies: [.id(reservations[1])]),
                OperationSpec(name: "strictly after failed", queue: "held", work: command("3"), dependencies: [.id(reservations[1])], requires: .success),
            ], queueSettings: [("held", QueueSettings(isSuspended: true))]), at: now)
        }
        var awaited: SubmissionReceipt!
        try run.step { core, now in
            var ok = OperationSpec(name: "ok", work: command("ok"))
            ok.reservation = reservations[0]
            var failing = OperationSpec(name: "failing", work: command("failing"))
            failing.reservation = reservations[1]
            awaited = try core.submit(Submission([ok, failing]), at: now)
        }
        try run.step { core, now in core.workerJoined("w1", slots: 2, at: now) }
        for (operation, status) in zip(awaited.operations, [AttemptReport.Status.succeeded, .failed]) {
            try run.step { core, now in
                _ = core.started(operation, attempt: 1, worker: "w1", at: now)
                _ = core.finished(operation, attempt: 1, worker: "w1", AttemptReport(status), at: now)
            }
        }
        #expect(run.core.isFinished(job: awaited.job) == true)
        let record = run.core.prune(job: awaited.job)
        try journal.prune([try #require(record)])
        var entries: [JournalEntry] = []
        try journal.forEachEntry { _, entry in entries.append(entry) }
        #expect(entries.map(\.summary).contains("the take-up of \(reservations[0]) by the pruned \(awaited.operations[0])"))
        #expect(!entries.contains { if case .submitted(let receipt, _, _) = $0 { receipt.job == awaited.job } else { false } })

        func expectReplayAgrees(_ when: String) throws {
            var recovered = Scheduler()
            _ = try journal.recover(into: &recovered)
            try recovered.checkInvariants()
            for operation in waiting.operations {
                let original = try #require(run.core.operation(operation))
                let replayed = try #require(recovered.operation(operation))
                #expect(Observed(replayed) == Observed(original), "\(original.name) \(when)")
            }
            #expect(recovered.operation(waiting.operations[0])?.state == .ready, "released by the success, not waiting again \(when)")
            #expect(recovered.operation(waiting.operations[2])?.outcome == .cancelled, "\(when)")
            #expect(recovered.openReservations.isEmpty, "\(when)")
        }
        try expectReplayAgrees("after a compaction")
        // A second compaction (another job pruned) keeps the take-ups too.
        var later: SubmissionReceipt!
        try run.step { core, now in later = try core.submit(Submission([OperationSpec(name: "later", work: command("later"))]), at: now) }
        try run.step { core, now in
            _ = core.started(later.operations[0], attempt: 1, worker: "w1", at: now)
            _ = core.finished(later.operations[0], attempt: 1, worker: "w1", AttemptReport(.succeeded), at: now)
        }
        let laterRecord = run.core.prune(job: later.job)
        try journal.prune([try #require(laterRecord)])
        try expectReplayAgrees("after a second compaction")
    }

    @Test func aForgottenJobIsATombstoneUntilTheGarbageIsHalfTheJournal() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let journal = try Journal(path: scratch.journalPath)
        var run = JournaledCore(journal: journal)
        var receipts: [SubmissionReceipt] = []
        for n in 0..<4 {
            try run.step { core, now in
                // Long names: the submissions are most of the journal (compaction counts only their bytes).
                let padding = String(repeating: "x", count: 200)
                receipts.append(try core.submit(Submission([OperationSpec(name: "a\(n)" + padding), OperationSpec(name: "b\(n)" + padding)]), at: now))
            }
        }
        func entries() throws -> [JournalEntry] {
            var all: [JournalEntry] = []
            try journal.forEachEntry { _, entry in all.append(entry) }
            return all
        }
        func replay() throws -> Scheduler {
            var recovered = Scheduler()
            _ = try journal.recover(into: &recovered)
            try recovered.checkInvariants()
            return recovered
        }
        let written = try entries().count

        // One job of four: a tombstone, nothing rewritten.
        let firstPruned = run.core.prune(job: receipts[0].job)
        journal.forget([try #require(firstPruned)])
        try journal.commit()
        #expect(journal.garbageOperations == 2 && !journal.compactionIsDue)
        #expect(try entries().count == written + 1)
        var recovered = try replay()
        #expect(recovered.job(receipts[0].job) == nil && recovered.operation(receipts[0].operations[0]) == nil)
        #expect(recovered.operation(receipts[1].operations[1])?.state == .finished)
        #expect(journal.garbageOperations == 2, "a replay counts the tombstones it met")

        // Three of four submissions forgotten: more than half of the journal; the compaction is due and
        // drops every record of these jobs.
        let morePruned = [run.core.prune(job: receipts[1].job), run.core.prune(job: receipts[2].job)].compactMap { $0 }
        journal.forget(morePruned)
        try journal.commit()
        #expect(journal.garbageOperations == 6 && journal.compactionIsDue)
        try journal.compact()
        #expect(journal.garbageOperations == 0 && !journal.compactionIsDue)
        let compacted = try entries()
        #expect(!compacted.contains { if case .forgotten = $0 { true } else { false } })
        #expect(compacted.filter { if case .pruned = $0 { true } else { false } }.count == 3)
        recovered = try replay()
        #expect(recovered.job(receipts[2].job) == nil && recovered.operation(receipts[3].operations[0])?.state == .finished)
        let next = try recovered.submit(Submission([OperationSpec(name: "c")]), at: 10)
        #expect(next.job.rawValue == receipts[3].job.rawValue + 1)
    }

    @Test func aFileThatIsNotAJournalIsRefusedAndLeftAlone() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let garbage = Data(repeating: 0x42, count: 4_096)
        try garbage.write(to: URL(fileURLWithPath: scratch.journalPath))
        #expect {
            _ = try Journal(path: scratch.journalPath)
        } throws: { error in
            guard case .corrupt = error as? JournalError else { return false }
            return "\(error)".contains("damaged or not an opq journal")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.journalPath)) == garbage)
    }

    @Test func aSecondHolderOfTheStateDirectoryIsRefused() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let first = try StateDirectory(path: scratch.path)
        // flock locks belong to the open file description: a second open in this process conflicts too.
        #expect {
            _ = try StateDirectory(path: scratch.path)
        } throws: { error in
            guard case .locked = error as? JournalError else { return false }
            return "\(error)".contains("in use by another opq-coordinator")
        }
        first.unlock()
        _ = try StateDirectory(path: scratch.path)
    }

    @Test func theJournalStaysLockedWhenTheStateDirectorysLockFileIsRemoved() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let first = try StateDirectory(path: scratch.path)
        let journal = try Journal(path: first.journalPath)
        try FileManager.default.removeItem(atPath: scratch.path + "/lock")
        // The lock file is gone, so a second holder gets the directory — but not the journal.
        let second = try StateDirectory(path: scratch.path)
        #expect {
            _ = try Journal(path: second.journalPath)
        } throws: { error in
            guard case .journalLocked(let path) = error as? JournalError else { return false }
            return path == first.journalPath && "\(error)".contains("locked by another process")
        }
        withExtendedLifetime(journal) {}
    }

    @Test func anEmptyJournalFileIsRefusedAndLeftAlone() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        #expect(FileManager.default.createFile(atPath: scratch.journalPath, contents: Data()))
        #expect {
            _ = try Journal(path: scratch.journalPath)
        } throws: { error in
            guard case .empty = error as? JournalError else { return false }
            return "\(error)".contains("is empty (0 bytes)") && "\(error)".contains("move it away")
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: scratch.journalPath)
        #expect((attributes[.size] as? NSNumber)?.intValue == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["journal.sqlite"])
    }

    @Test func aJournalTwoCoordinatorsWroteFailsItsReplayNamingTheConflictAndIsLeftAlone() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        do {
            // Two cores that each believe they are alone acknowledge job-1, into the same journal.
            let journal = try Journal(path: scratch.journalPath)
            var first = JournaledCore(journal: journal)
            var second = JournaledCore(journal: journal)
            try first.step { core, now in _ = try core.submit(Submission([OperationSpec(name: "a", work: command("a"))]), at: now) }
            try second.step { core, now in _ = try core.submit(Submission([OperationSpec(name: "b", work: command("b"))]), at: now) }
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: scratch.journalPath))
        do {
            var recovered = Scheduler()
            #expect {
                _ = try Journal(path: scratch.journalPath).recover(into: &recovered)
            } throws: { error in
                guard case .inconsistent(let path, _, _) = error as? JournalError else { return false }
                let message = "\(error)"
                return path == scratch.journalPath && message.contains("the submission of job-1 (op-1)")
                    && message.contains("replays as job-2") && message.contains("two coordinators") && message.contains("changed nothing")
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.journalPath)) == before, "the journal was changed")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["journal.sqlite"])
    }

    @Test func aCommitOnAFullDiskKeepsItsEntriesAndSucceedsOnceThereIsRoom() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let journal = try Journal(path: scratch.journalPath)
        var run = JournaledCore(journal: journal)
        try run.step { core, now in _ = try core.submit(Submission([OperationSpec(name: "a", work: command("a"))]), at: now) }
        // SQLite's page limit stands in for a full file system: the same SQLITE_FULL.
        try journal.limitPages(toCurrentPlus: 0)
        var receipt: SubmissionReceipt!
        let big = (0..<200).map { OperationSpec(name: "op\($0)", work: command(String(repeating: "x", count: 100))) }
        #expect {
            try run.step { core, now in receipt = try core.submit(Submission(big), at: now) }
        } throws: { error in
            guard case .diskFull(let path) = error as? JournalError else { return false }
            return path == scratch.journalPath && "\(error)".contains("state disk is full") && "\(error)".contains("nothing was accepted")
        }
        #expect(journal.hasPending && journal.pendingBytes > 20_000)
        try journal.limitPages(toCurrentPlus: 1_000)
        try journal.commit()
        #expect(!journal.hasPending)

        var recovered = Scheduler()
        _ = try journal.recover(into: &recovered)
        #expect(recovered.job(receipt.job)?.counts.ready == 200)
    }

    @Test func theDefaultStateDirectoryFollowsXDG() {
        #expect(StateDirectory.defaultPath(environment: ["XDG_STATE_HOME": "/x/state", "HOME": "/home/u"]) == "/x/state/opq")
        #expect(StateDirectory.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.local/state/opq")
        #expect(StateDirectory.defaultPath(environment: ["XDG_STATE_HOME": "relative", "HOME": "/home/u"]) == "/home/u/.local/state/opq")
    }

}
