import Testing
@testable import OPQCore

/// SEMANTICS §6: barriers.
@Suite struct BarrierRuleTests {
    @Test func rule6_aBarrierWaitsForEverythingEarlierAndHoldsEverythingLater() throws {
        var h = Harness()
        try h.join("w1", slots: 8)
        try h.submit([op("a1"), op("a2", priority: .low)])
        try h.submit([op("B", barrier: true, empty: true), op("c", priority: .veryHigh)])
        try h.submit([op("d")])
        #expect(h.dispatchOrder == ["a1", "a2"])
        try h.complete("a1")
        #expect(h.state("B") == .pending)
        try h.complete("a2")
        #expect(h.outcome("B") == .succeeded)
        #expect(h.dispatchOrder == ["a1", "a2", "c", "d"])
    }

    @Test func rule6_aBarrierOnlyConcernsItsOwnQueue() throws {
        var h = Harness()
        try h.join("w1", slots: 4)
        try h.submit([op("slow"), op("B", barrier: true), op("other", queue: "side")])
        #expect(h.dispatchOrder == ["slow", "other"])
    }

    @Test func rule6_aBarrierRespectsSuspensionEvenOnAnEmptyQueue() throws {
        var h = Harness()
        try h.suspend()
        try h.submit([op("B", barrier: true, empty: true)])
        #expect(h.state("B") == .ready, "Foundation on Linux runs it at once; we do not")
        try h.suspend("default", false)
        #expect(h.outcome("B") == .succeeded)
    }

    @Test func rule6_aBarrierWithWorkIsDispatchedLikeAnyOperation() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.submit([op("a"), op("manifest", barrier: true), op("b")])
        try h.complete("a")
        #expect(h.dispatchOrder == ["a", "manifest"])
        try h.complete("manifest", .exited(1))
        #expect(h.dispatchOrder == ["a", "manifest", "b"], "a failed barrier still releases what follows")
    }

    @Test func rule6_barriersAreLeftOutOfCountsButWaitedForByWaitForAll() throws {
        var h = Harness()
        try h.suspend()
        let job = try h.submit([op("a"), op("B", barrier: true)])
        #expect(h.core.queue("default")!.operationCount == 1)
        #expect(h.core.job(job.job)!.counts.total == 1)
        #expect(h.core.operations(inQueue: "default") == [h.id("a")])
        try h.cancel("a")
        #expect(h.core.queue("default")!.operationCount == 0 && !h.core.isIdle(queue: "default"))
    }

    @Test func rule6_cancellingOneBarrierDoesNotReleaseWhatAnEarlierBarrierHolds() throws {
        var h = Harness()
        try h.join("w1", slots: 4)
        try h.submit([op("a"), op("B1", barrier: true), op("b"), op("B2", barrier: true)])
        try h.submit([op("late")])
        try h.cancel("B2")
        #expect(h.state("late") == .pending, "still held by B1")
        try h.complete("a")
        try h.complete("B1")
        #expect(Set(h.dispatchOrder) == ["a", "B1", "b", "late"])
    }
}
