import Testing
@testable import OPQCoordinator

/// A flooding client is told that its requests were not applied (issue 11: over real sockets the
/// refusals never arrived). One loop turn applies up to `messagesPerTurn` requests before their replies
/// reach the outbox, so a full client's queue can already be past its limit plus the refusal allowance.
@Suite struct ClientOutboxRefusalTests {
    static let flooder: [UInt8] = Array("flooder".utf8)

    @Test func aClientWhoseQueueOvershotTheLimitInOneTurnStillGetsItsFirstRefusals() {
        var outbox = ClientOutbox(maxMessages: 10, maxBytes: 1 << 20, refusalAllowance: 3)
        // One turn's replies: the limit plus more than the allowance.
        for k in 0..<40 { outbox.keep([Self.flooder, Array("reply \(k)".utf8)]) }
        #expect(outbox.isFull(Self.flooder))
        let kept = (0..<5).map { k in outbox.keep([Self.flooder, Array("refusal \(k)".utf8)], refusal: true) }
        #expect(kept == [true, true, true, false, false], "the first refusals must be kept, then they may be dropped")

        // Once the client has read everything, a new episode has its allowance again.
        _ = outbox.drain { _ in .sent }
        for k in 0..<40 { outbox.keep([Self.flooder, Array("reply \(k)".utf8)]) }
        let keptAgain = outbox.keep([Self.flooder, Array("refusal".utf8)], refusal: true)
        #expect(keptAgain)
    }
}
