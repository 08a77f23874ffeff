import Foundation
import OPQCore
@testable import OPQJournal
import Testing

/// When the journal's WAL is checkpointed and written back (``WALCheckpoints``, issue 19): the rules on
/// their own, then a journal committing for long.
@Suite struct WALCheckpointsTests {
    /// Feeds `policy` one commit per WAL length in `lengths`, with `syncing` as the background sync's
    /// state, and returns what each commit was told to do.
    func run(_ policy: inout WALCheckpoints, _ lengths: some Sequence<Int>, syncing: Bool = false) -> [WALCheckpoints.Action] {
        lengths.map { policy.committed(frames: $0, syncing: { syncing }) }
    }

    @Test func aBackgroundSyncStartsEverySyncFramesFramesAndNotWhileOneIsUnderWay() {
        var policy = WALCheckpoints(checkpointFrames: 100, maxFrames: 200, syncFrames: 10)
        #expect(run(&policy, 1...9) == Array(repeating: .doNothing, count: 9))
        #expect(run(&policy, [10]) == [.sync(frames: 10)])
        // Under way: the next one waits for it, then starts at once.
        #expect(run(&policy, 11...25, syncing: true).allSatisfy { $0 == .doNothing })
        #expect(run(&policy, [26, 27]) == [.sync(frames: 26), .doNothing])
        #expect(policy.syncedFrom == 26)
    }

    @Test func aDueCheckpointWaitsForASyncStartedPastTheMarkToEndWhileCommitsGoOn() {
        var policy = WALCheckpoints(checkpointFrames: 100, maxFrames: 200, syncFrames: 10)
        _ = run(&policy, stride(from: 10, through: 90, by: 10))
        #expect(policy.syncedFrom == 90)
        // The mark: a sync of everything so far starts first…
        #expect(run(&policy, [101]) == [.sync(frames: 101)])
        // …commits go on while it runs…
        #expect(run(&policy, 102...150, syncing: true).allSatisfy { $0 == .doNothing })
        // …and the checkpoint follows it, its own WAL sync left with the frames since.
        #expect(run(&policy, [151]) == [.checkpoint])
        // A checkpoint that failed (a full disk) is tried again at the next commit, as SQLite's own would be.
        #expect(run(&policy, [152]) == [.checkpoint])
    }

    @Test func theWALIsCheckpointedAtItsBoundWhateverTheSyncIsDoing() {
        var policy = WALCheckpoints(checkpointFrames: 100, maxFrames: 200, syncFrames: 10)
        #expect(run(&policy, 1...199, syncing: true).allSatisfy { $0 == .doNothing })
        #expect(run(&policy, [200, 201], syncing: true) == [.checkpoint, .checkpoint])
    }

    @Test func aRestartedWALIsSyncedAfreshBeforeItsNextCheckpoint() {
        var policy = WALCheckpoints(checkpointFrames: 100, maxFrames: 200, syncFrames: 50)
        _ = run(&policy, [50, 100])
        #expect(run(&policy, [110]) == [.checkpoint])
        // Restarted from its start: nothing of it is synced yet.
        #expect(run(&policy, [1]) == [.doNothing] && policy.syncedFrom == 0)
        #expect(run(&policy, [50, 99]) == [.sync(frames: 50), .doNothing])
        #expect(run(&policy, [100, 101]) == [.sync(frames: 100), .checkpoint])
    }

    @Test func withoutABackgroundSyncTheCheckpointRunsWhenDue() {
        var policy = WALCheckpoints(checkpointFrames: 100, maxFrames: 200, syncFrames: nil)
        #expect(run(&policy, 1...99).allSatisfy { $0 == .doNothing })
        #expect(run(&policy, [100, 1]) == [.checkpoint, .doNothing])
    }

    /// Commits one small row at a time (at least one WAL frame each), `count` times.
    func commit(_ journal: Journal, _ count: Int, from first: Int = 0) throws {
        for k in first..<first + count {
            journal.append(.jobFinished(JobID(UInt64(k + 1)), time: Double(k)))
            try journal.commit()
        }
    }

    @Test func aLongRunOfCommitsKeepsTheWALBoundedWritesItBackInTheBackgroundAndLosesNothing() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let commits = 4 * Journal.maxCheckpointFrames
        do {
            let journal = try Journal(path: scratch.journalPath)
            var largest = 0
            for round in 0..<40 {
                try commit(journal, commits / 40, from: round * commits / 40)
                largest = max(largest, Self.size(of: scratch.journalPath + "-wal"))
            }
            #expect(largest <= Self.walBytes(frames: Journal.maxCheckpointFrames), "the WAL grew to \(largest) bytes")
            #expect(journal.walUpkeep.checkpoints >= 2)
            let writeback = try #require(journal.walUpkeep.writeback)
            #expect(writeback.completedSyncs + (writeback.isSyncing ? 1 : 0) >= 2)
            // The background descriptor leaves the journal locked to everyone else.
            try Self.expectLockedToAnotherProcess(scratch.journalPath)
        }
        let reopened = try Journal(path: scratch.journalPath)
        var finished: [UInt64] = []
        try reopened.forEachEntry { _, entry in
            if case .jobFinished(let job, _) = entry { finished.append(job.rawValue) }
        }
        #expect(finished == Array(1...UInt64(commits)))
    }

    @Test func withPowerLossDurabilityThereIsNoBackgroundSyncAndTheWALStaysBounded() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let journal = try Journal(path: scratch.journalPath, sync: .powerLoss)
        #expect(journal.walUpkeep.writeback == nil)
        try commit(journal, Journal.checkpointFrames + 10)
        #expect(journal.walUpkeep.checkpoints >= 1)
        #expect(Self.size(of: scratch.journalPath + "-wal") <= Self.walBytes(frames: Journal.checkpointFrames))
    }

    /// The size of a WAL checkpointed at `frames` frames: its 32-byte header, then frames of a 4 KiB page and
    /// a 24-byte header each, the commit that crossed the mark having written a few more.
    static func walBytes(frames: Int) -> Int { 32 + (frames + 4) * (4_096 + 24) }

    static func size(of path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : 0
    }

    /// Another process (python3's sqlite3) cannot read the journal at `path`.
    static func expectLockedToAnotherProcess(_ path: String) throws {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", """
            import sqlite3, sys
            try:
                sqlite3.connect(sys.argv[1], timeout=0).execute("SELECT count(*) FROM journal").fetchall()
            except sqlite3.OperationalError as error:
                sys.exit(0 if "locked" in str(error) else 2)
            sys.exit(1)
            """, path]
        try python.run()
        python.waitUntilExit()
        #expect(python.terminationStatus == 0, "another process could read the journal (status \(python.terminationStatus))")
    }
}
