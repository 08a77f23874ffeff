import OPQCore
@testable import OPQClient
import OPQWire
import Testing

/// A receipt carries where the coordinator's event stream stood once the job was accepted only when the
/// coordinator said both parts of it: a watch resumed from half a position could follow another instance's
/// numbering.
@Suite struct JobReceiptTests {
    @Test func aPositionNeedsBothTheSequenceAndTheInstance() {
        let full = JobReceipt(.with { $0.job = 3; $0.operations = [7, 8]; $0.eventSequence = 41; $0.instance = "12-34" })
        #expect(full.job == JobID(3) && full.operations == [OperationID(7), OperationID(8)])
        #expect(full.streamPosition == JobReceipt.StreamPosition(sequence: 41, instance: "12-34"))
        // An older coordinator (neither), a duplicate's receipt (neither), or half of one: no position.
        #expect(JobReceipt(.with { $0.job = 3; $0.operations = [7] }).streamPosition == nil)
        #expect(JobReceipt(.with { $0.job = 3; $0.eventSequence = 41 }).streamPosition == nil)
        #expect(JobReceipt(.with { $0.job = 3; $0.instance = "12-34" }).streamPosition == nil)
    }
}
