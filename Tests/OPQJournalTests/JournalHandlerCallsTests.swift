import OPQCore
@testable import OPQJournal
import OPQWire
import Testing

/// An operation made of several handler calls (`Work.handlers`) is journaled with its calls and comes
/// back whole after a restart.
@Suite struct JournalHandlerCallsTests {
    @Test func handlerCallsComeBackFromTheJournalInOrderWithTheirPayloads() throws {
        let scratch = try ScratchState()
        defer { scratch.remove() }
        let journal = try Journal(path: scratch.journalPath)
        let calls = [HandlerCall("resize", text: "a.png"), HandlerCall("sha256", payload: [0, 255, 7]), HandlerCall("noop")]
        var request = Opq_V1_ClientRequest()
        request.requestID = 3
        request.submit = Opq_V1_Submit(Submission([OperationSpec(name: "blocks", work: .handlers(calls))]), idempotencyKey: "k-3")
        var submission = Submission(request.submit)
        submission.idempotencyKey = "k-3"
        submission.received = try request.serializedBytes()
        var run = JournaledCore(journal: journal)
        var receipt: SubmissionReceipt!
        try run.step { core, now in receipt = try core.submit(submission, at: now) }

        var recovered = Scheduler()
        _ = try journal.recover(into: &recovered)
        #expect(recovered.operation(receipt.operations[0])?.work == .handlers(calls))
    }
}
