import OPQCore
@testable import OPQCoordinator
import OPQWire
import Testing

/// A watch that asks for an event delay (`Watch.event_delay_seconds`, `opq map`): its events go out at
/// most once per delay while they keep coming — every one of them, in order, numbered as always — the
/// first after a quiet spell and a JobFinished at once, and the loop wakes when held events are due.
@Suite struct EventDelayTests {
    /// One `Events` message the turn sent to `client`: what it says came before, and its items' sequences
    /// and states (nil for a JobFinished).
    struct Sent: Equatable {
        var previous: UInt64
        var items: [UInt64]
        var states: [Opq_V1_OperationState?]
    }

    static func sent(_ actions: [CoordinatorAction], to client: String = "alice") throws -> [Sent] {
        var messages: [Sent] = []
        for case .notice(let frames) in actions {
            let (identity, message, _) = try Frames.decodeRouted(frames, as: Opq_V1_CoordinatorToClient.self)
            guard identity == Array(client.utf8), case .events(let batch)? = message.body else { continue }
            messages.append(Sent(previous: batch.previous, items: batch.items.map(\.sequence), states: batch.items.map {
                if case .operation(let change)? = $0.kind { change.state } else { nil }
            }))
        }
        return messages
    }

    /// The turn at `time`: its actions, and when it asks the loop to wake.
    static func turn(_ d: inout StateDriver, at time: Double) -> (actions: [CoordinatorAction], wake: Double?) {
        d.now = time
        d.state.tick(now: time)
        var actions: [CoordinatorAction] = []
        repeat { actions += d.state.finishTurn(now: time) } while d.state.hasTurnWork
        let wake = actions.compactMap { if case .wakeAt(let at) = $0 { at } else { nil } }.last
        return (actions, wake)
    }

    /// Worker w1 (2 slots) runs job 1 (a, b, c); alice (who may leave `backlog` messages unread) watches it
    /// with `delay`; the watch's start is sent.
    static func watching(delay: Double, backlog: Int = 10_000) throws -> StateDriver {
        var d = StateDriver(durable: false, clientBacklogMessages: backlog)
        _ = try d.register("w1", slots: 2)
        _ = try d.submit(1, ["a", "b", "c"])
        _ = turn(&d, at: 100)
        _ = try d.client("alice", 2) {
            $0.watch.job = 1
            $0.watch.eventDelaySeconds = delay
        }
        _ = turn(&d, at: 100)
        return d
    }

    @Test func eventsWithinTheDelayGoTogetherInOrderWhenItIsDue() throws {
        var d = try Self.watching(delay: 0.005)
        // The first events after a quiet spell go at once.
        _ = try d.started("w1", 1, sequence: 1)
        let first = try Self.sent(Self.turn(&d, at: 100.001).actions)
        #expect(first.count == 1)
        #expect(try #require(first.first).states == [.executing])
        // More within the delay are held; the loop is told to wake when they are due.
        _ = try d.started("w1", 2, sequence: 2)
        let held = Self.turn(&d, at: 100.002)
        #expect(try Self.sent(held.actions).isEmpty)
        #expect(abs((held.wake ?? 0) - 100.006) < 1e-9, "wakes at \(held.wake ?? 0)")
        _ = try d.finished("w1", 1, sequence: 3)
        #expect(try Self.sent(Self.turn(&d, at: 100.004).actions).isEmpty)
        // Due: one message with everything since, following the first one without a gap.
        let due = try Self.sent(Self.turn(&d, at: 100.006).actions)
        #expect(due.count == 1)
        let last = try #require(first.first?.items.last)
        #expect(due.first?.previous == last)
        #expect(due.first?.items == Array(last + 1...last + UInt64(due.first?.items.count ?? 0)), "numbered in order, none left out")
        #expect(try #require(due.first).states == [.executing, .finished, .dispatched])
        #expect(d.state.heldEventsDue == nil)
    }

    @Test func aJobsFinishGoesAtOnceWithEverythingBeforeIt() throws {
        var d = try Self.watching(delay: 0.5)
        _ = try d.started("w1", 1, sequence: 1)
        let first = try Self.sent(Self.turn(&d, at: 100.001).actions)
        #expect(first.count == 1)
        _ = try d.finished("w1", 1, sequence: 2)
        _ = try d.started("w1", 2, sequence: 3)
        _ = try d.finished("w1", 2, sequence: 4)
        #expect(try Self.sent(Self.turn(&d, at: 100.002).actions).isEmpty)
        _ = try d.started("w1", 3, sequence: 5)
        _ = try d.finished("w1", 3, sequence: 6)
        // Long before the delay is over: the job's finish and what was held go now, in one message.
        let end = try Self.sent(Self.turn(&d, at: 100.003).actions)
        #expect(end.count == 1)
        #expect(end.first?.previous == first.first?.items.last)
        let states = try #require(end.first).states
        #expect(states.last == .some(nil), "the JobFinished comes last")
        #expect(states.filter { $0 == .finished }.count == 3)
        #expect(d.state.heldEventsDue == nil)
    }

    /// Without a delay every turn's events go at once; with one, so do those after a quiet spell as long
    /// as the delay.
    @Test(arguments: [(0.0, 100.0011), (0.005, 100.007)])
    func eventsGoAtOnceWithoutADelayOrAfterAQuietSpell(delay: Double, next: Double) throws {
        var d = try Self.watching(delay: delay)
        _ = try d.started("w1", 1, sequence: 1)
        #expect(try Self.sent(Self.turn(&d, at: 100.001).actions).count == 1)
        _ = try d.started("w1", 2, sequence: 2)
        #expect(try Self.sent(Self.turn(&d, at: next).actions).count == 1)
        #expect(d.state.heldEventsDue == nil)
    }

    @Test func heldEventsOfAFullClientAreSkippedAndTheNextMessageShowsTheGap() throws {
        var d = try Self.watching(delay: 0.005, backlog: 1)
        _ = try d.started("w1", 1, sequence: 1)
        let first = try Self.sent(Self.turn(&d, at: 100.001).actions)
        _ = try d.started("w1", 2, sequence: 2)
        _ = Self.turn(&d, at: 100.002)
        // Alice stops reading: when the held events are due they are skipped, not kept.
        d.state.keepForLater(try Frames.encode(Opq_V1_CoordinatorToClient.reply(9) { $0.done = Opq_V1_Done() }, to: Array("alice".utf8)),
                             refusal: false)
        #expect(try Self.sent(Self.turn(&d, at: 100.006).actions).isEmpty)
        #expect(d.state.heldEventsDue == nil)
        _ = d.state.clientBacklog.drain { _ in .sent }
        _ = try d.finished("w1", 1, sequence: 3)
        let next = try Self.sent(Self.turn(&d, at: 100.020).actions)
        #expect(next.count == 1)
        let last = try #require(first.first?.items.last)
        #expect((next.first?.previous ?? 0) > last, "the client sees that events after \(last) were skipped")
    }

    @Test func theDelayIsCappedAtOneSecond() throws {
        let d = try Self.watching(delay: 3600)
        #expect(d.state.watchers.values.map(\.eventDelay) == [Watcher.maxEventDelay])
        #expect(Watcher.maxEventDelay == 1)
    }
}
