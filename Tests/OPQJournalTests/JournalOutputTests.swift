import Foundation
import GRDB
import OPQCore
@testable import OPQJournal
import Testing

/// The `outputs` table: what a finish report said, who sent it and when, across reopens and schema changes.
struct JournalOutputTests {
    private func output(_ text: String, worker: String = "", endedAt: Double? = nil) -> OperationOutput {
        OperationOutput(exitCode: 1, signal: nil, duration: 2.5, stdout: Array(text.utf8), stdoutTotal: UInt64(text.utf8.count),
                        stderr: [], stderrTotal: 0, errorMessage: "exit status 1", worker: worker, endedAt: endedAt)
    }

    private func outputs(_ path: String) throws -> [OperationID: OperationOutput] {
        let journal = try Journal(path: path)
        var found: [OperationID: OperationOutput] = [:]
        try journal.forEachOutput { id, output in found[id] = output }
        return found
    }

    @Test func theWorkerAndEndTimeOfAReportSurviveAReopen() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let kept = output("hello\n", worker: "w1", endedAt: 1_795_000_000.25)
        do {
            let journal = try Journal(path: scratch.journalPath)
            journal.append(output: kept, of: OperationID(7))
            try journal.commit()
        }
        let found = try outputs(scratch.journalPath)
        #expect(found == [OperationID(7): kept])
        #expect(found[OperationID(7)]?.startedAt == 1_794_999_997.75)
    }

    @Test func aHandlersResultSurvivesAReopenApartFromTheOutput() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let result: [UInt8] = [0, 0xFF, 0x7B] + Array("{\"n\":1}".utf8)  // not UTF-8: raw bytes, kept as they are
        let kept = OperationOutput(exitCode: nil, signal: nil, duration: 0.5, stdout: [], stdoutTotal: 0, stderr: [], stderrTotal: 0,
                                   errorMessage: "", worker: "w1", endedAt: 1_795_000_000, result: result)
        #expect(kept.isWorthJournaling && !kept.isBare, "a result alone is worth journaling")
        do {
            let journal = try Journal(path: scratch.journalPath)
            journal.append(output: kept, of: OperationID(9))
            journal.append(output: output("plain\n"), of: OperationID(10))
            try journal.commit()
        }
        let found = try outputs(scratch.journalPath)
        #expect(found[OperationID(9)]?.result == result && found[OperationID(9)]?.stdout == [])
        #expect(found[OperationID(10)]?.result == [], "a report without a result reads with none")
        #expect(kept.withoutResult.result.isEmpty && kept.withoutResult.worker == "w1")
    }

    @Test func aForgottenJobsResultsGoWithItsOutputs() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        func withResult(_ text: String) -> OperationOutput {
            OperationOutput(exitCode: nil, signal: nil, duration: 0, stdout: [], stdoutTotal: 0, stderr: [], stderrTotal: 0,
                            errorMessage: "", result: Array(text.utf8))
        }
        do {
            let journal = try Journal(path: scratch.journalPath)
            for id in 1...3 as ClosedRange<UInt64> { journal.append(output: withResult("r\(id)"), of: OperationID(id)) }
            try journal.commit()
            journal.forget([Scheduler.PrunedJob(job: JobID(1), first: OperationID(1), outcomes: [.succeeded, .succeeded])])
            try journal.commit()
        }
        let found = try outputs(scratch.journalPath)
        #expect(found == [OperationID(3): withResult("r3")])
        let rows = try DatabaseQueue(path: scratch.journalPath).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM results") }
        #expect(rows == 1, "the results rows of the forgotten operations are gone")
    }

    @Test func aJournalWithTheOlderOutputsTableOpensAndGainsTheColumns() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        do {  // The schema as journals were written before the worker and end time were kept.
            let database = try DatabaseQueue(path: scratch.journalPath)
            try database.writeWithoutTransaction { db in
                try db.execute(sql: """
                    CREATE TABLE journal (seq INTEGER PRIMARY KEY, entries BLOB NOT NULL);
                    CREATE TABLE outputs (
                        operation INTEGER PRIMARY KEY, exit_code INTEGER, signal INTEGER, duration REAL NOT NULL,
                        stdout BLOB NOT NULL, stdout_total INTEGER NOT NULL, stderr BLOB NOT NULL,
                        stderr_total INTEGER NOT NULL, message TEXT NOT NULL);
                    PRAGMA application_id = \(Journal.applicationID);
                    PRAGMA user_version = 1;
                    INSERT INTO outputs VALUES (3, 1, NULL, 2.5, x'6F6C640A', 4, x'', 0, 'exit status 1');
                    """)
            }
        }
        let old = try outputs(scratch.journalPath)
        #expect(old == [OperationID(3): output("old\n")], "an old report reads with no worker and no end time")
        let kept = output("new\n", worker: "w2", endedAt: 1_795_000_010)
        do {
            let journal = try Journal(path: scratch.journalPath)
            journal.append(output: kept, of: OperationID(4))
            try journal.commit()
        }
        #expect(try outputs(scratch.journalPath) == [OperationID(3): output("old\n"), OperationID(4): kept])
        let columns = try DatabaseQueue(path: scratch.journalPath).read { db in
            try Row.fetchAll(db, sql: "PRAGMA table_info(outputs)").map { $0["name"] as String }
        }
        #expect(columns.suffix(2) == ["worker", "ended_at"])
    }
}
