import OPQCore
@testable import OPQJournal
import OPQWire
import Testing

/// The journal stores a submission as the coordinator received it (issue 12).
@Suite struct JournalSubmissionBytesTests {
    @Test func aSubmissionIsStoredAsTheRequestBytesItCameInWithItsKey() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let journal = try Journal(path: scratch.journalPath)
        var request = Opq_V1_ClientRequest()
        request.requestID = 9
        request.submit = Opq_V1_Submit(Submission([OperationSpec(name: "a", work: .command(Command(["/bin/echo", "a"])))]),
                                       idempotencyKey: "k-9")
        let bytes: [UInt8] = try request.serializedBytes()
        var submission = Submission(request.submit)
        submission.idempotencyKey = "k-9"
        submission.received = bytes
        var run = JournaledCore(journal: journal)
        var receipt: SubmissionReceipt!
        try run.step { core, now in receipt = try core.submit(submission, at: now) }

        var stored: [JournalEntry] = []
        try journal.forEachEntry { _, entry in stored.append(entry) }
        guard case let .submitted(storedReceipt, storedSubmission, key)? = stored.first else {
            Issue.record("no submission journaled: \(stored)")
            return
        }
        #expect(storedReceipt == receipt && key == "k-9")
        #expect(storedSubmission.received == bytes, "the bytes as received, not a re-encoding")
        var recovered = Scheduler()
        let state = try journal.recover(into: &recovered)
        #expect(state.receipts == ["k-9": receipt])
        #expect(recovered.operation(receipt.operations[0])?.name == "a")
    }
}
