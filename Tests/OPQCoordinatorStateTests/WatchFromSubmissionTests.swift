import OPQCore
@testable import OPQCoordinator
import OPQWire
import Testing

/// A submission's receipt says where the event stream stood once it was accepted
/// (`SubmitAccepted.event_sequence`, `.instance`), and a watch of the job resumed there gets everything
/// that happened to the job since, in order, and no snapshot — what `opq run` and `opq map` do instead of
/// asking for a snapshot of the operations they just sent.
@Suite struct WatchFromSubmissionTests {
    /// What the turn sent to `client`, decoded.
    static func sent(_ actions: [CoordinatorAction], to client: String = "alice") throws -> [Opq_V1_CoordinatorToClient] {
        var messages: [Opq_V1_CoordinatorToClient] = []
        for action in actions {
            let frames: [[UInt8]]
            switch action {
            case .reply(let replied), .notice(let replied): frames = replied
            default: continue
            }
            let (identity, message, _) = try Frames.decodeRouted(frames, as: Opq_V1_CoordinatorToClient.self)
            if identity == Array(client.utf8) { messages.append(message) }
        }
        return messages
    }

    /// The states the events of `messages` carry, in order (nil for a JobFinished).
    static func states(_ messages: [Opq_V1_CoordinatorToClient]) -> [Opq_V1_OperationState?] {
        messages.flatMap { message -> [Opq_V1_OperationState?] in
            guard case .events(let batch)? = message.body else { return [] }
            return batch.items.map { if case .operation(let change)? = $0.kind { change.state } else { nil } }
        }
    }

    /// Worker w1 (2 slots) is registered; alice submits job 1 (a, b, c; c after a: a and b dispatched at
    /// once) and the turn ends. Returns the receipt.
    static func submitted(_ d: inout StateDriver, key: String = "") throws -> Opq_V1_SubmitAccepted {
        _ = try d.register("w1", slots: 2)
        return try #require(try submit(&d, 1, key: key))
    }

    /// alice submits a, b, c (c after a) as request `id`; the receipt the turn sent her.
    static func submit(_ d: inout StateDriver, _ id: UInt64, key: String) throws -> Opq_V1_SubmitAccepted? {
        var actions = try d.submitActions(id, ["a", "b", "c"], after: ["c": ["a"]], key: key)
        actions += EventDelayTests.turn(&d, at: d.now).actions
        return try sent(actions).compactMap { message -> Opq_V1_SubmitAccepted? in
            if case .reply(let reply)? = message.body, case .submitted(let accepted)? = reply.result { accepted } else { nil }
        }.first
    }

    /// alice watches job 1 from `position` (request 2) at `time`: what she was sent.
    static func watch(_ d: inout StateDriver, after sequence: UInt64, instance: String, at time: Double) throws -> [Opq_V1_CoordinatorToClient] {
        var actions = try d.clientActions("alice", 2) {
            $0.watch.job = 1
            $0.watch.resumeAfter = sequence
            $0.watch.instance = instance
        }
        actions += EventDelayTests.turn(&d, at: time).actions
        return try sent(actions)
    }

    @Test func theReceiptSaysWhereTheStreamStoodAfterTheSubmissionsOwnEvents() throws {
        var d = StateDriver(durable: false)
        let receipt = try Self.submitted(&d)
        #expect(receipt.instance == "test")
        // Up to the receipt's sequence: what the submission did at once — a and b ready and dispatched to the
        // free slots, c pending; nothing after it yet.
        func described(_ events: some Sequence<LoggedEvent>) -> [String] {
            events.map { if case .operation(let change) = $0.kind { "\(change.operation.rawValue) \(change.state)" } else { "other" } }
        }
        let before = try #require(d.state.events.events(after: 0)).prefix { $0.sequence <= receipt.eventSequence }
        #expect(described(before) == ["1 ready", "2 ready", "3 pending", "1 dispatched", "2 dispatched"])
        #expect(receipt.eventSequence == d.state.events.lastSequence)
    }

    @Test func aWatchResumedAtTheReceiptGetsNoSnapshotAndEveryEventSinceInOrder() throws {
        var d = StateDriver(durable: false)
        let receipt = try Self.submitted(&d)
        _ = try d.started("w1", 1, sequence: 1)
        _ = EventDelayTests.turn(&d, at: 100.001)
        let start = try Self.watch(&d, after: receipt.eventSequence, instance: receipt.instance, at: 100.002)
        let reply = try #require(start.first { if case .reply? = $0.body { true } else { false } })
        #expect(reply.reply.watching.resumed)
        #expect(!start.contains { if case .snapshot? = $0.body { true } else { false } }, "no snapshot")
        let batches = start.compactMap { message -> Opq_V1_Events? in if case .events(let batch)? = message.body { batch } else { nil } }
        let first = try #require(batches.first)
        #expect(first.previous == receipt.eventSequence, "the stream follows on from the receipt")
        #expect(Self.states(start) == [.executing], "a's start, the one event since the receipt")
        // And goes on as any stream: a's finish, c ready and dispatched, then the rest to the job's end.
        _ = try d.finished("w1", 1, sequence: 2)
        let next = try Self.sent(EventDelayTests.turn(&d, at: 100.003).actions)
        #expect(Self.states(next) == [.finished, .ready, .dispatched])
    }

    @Test func anotherInstancesPositionOrADuplicatesReceiptStartsWithASnapshot() throws {
        var d = StateDriver(durable: false)
        let receipt = try Self.submitted(&d, key: "k")
        let start = try Self.watch(&d, after: receipt.eventSequence, instance: "an instance before a restart", at: 100.001)
        #expect(start.first { if case .reply? = $0.body { true } else { false } }?.reply.watching.resumed == false)
        #expect(start.contains { if case .snapshot? = $0.body { true } else { false } })
        // The same key again: the first receipt, which cannot say where the stream stood back then.
        let duplicate = try Self.submit(&d, 3, key: "k")
        #expect(duplicate?.duplicate == true && duplicate?.jobID == JobID(1))
        #expect(duplicate?.eventSequence == 0 && duplicate?.instance == "")
    }
}
