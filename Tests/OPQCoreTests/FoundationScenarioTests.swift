import Testing
@testable import OPQCore

/// The NSOperationQueue scenarios of the seed documents, adapted to one coordinator and its workers.
@Suite struct FoundationScenarioTests {
    @Test func batchOnOneSlotRunsByPriority() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("normal"), op("low", priority: .low), op("veryHigh", priority: .veryHigh), op("veryLow", priority: .veryLow)])
        let order = try h.runToEnd()
        #expect(order == ["veryHigh", "normal", "low", "veryLow"])
    }

    @Test func fiveNormalOperationsAddedWhileSuspendedRunInOrder() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.suspend()
        for k in 1...5 { try h.submit([op("op\(k)")]) }
        #expect(h.dispatchOrder.isEmpty)
        try h.suspend("default", false)
        let order = try h.runToEnd()
        #expect(order == ["op1", "op2", "op3", "op4", "op5"])
    }

    @Test func allLevelsAddedWhileSuspendedRunFromVeryHighToVeryLow() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.suspend()
        for level in QueuePriority.allCases { try h.submit([op("\(level)", priority: level)]) }
        try h.suspend("default", false)
        let order = try h.runToEnd()
        #expect(order == ["veryHigh", "high", "normal", "low", "veryLow"])
    }

    @Test func cancellingOneOfFiveQueuedOperationsSkipsOnlyIt() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.suspend()
        try h.submit((1...5).map { op("op\($0)") })
        try h.cancel("op3")
        #expect(h.state("op3") == .finished && h.outcome("op3") == .cancelled)
        try h.suspend("default", false)
        let order = try h.runToEnd()
        #expect(order == ["op1", "op2", "op4", "op5"])
    }

    @Test func cancellingTheNormalOperationsLeavesOnlyTheHighOnesToRun() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.suspend()
        try h.submit([op("h1", priority: .high), op("n1"), op("h2", priority: .high), op("n2"), op("n3")])
        for name in ["n1", "n2", "n3"] { try h.cancel(name) }
        try h.suspend("default", false)
        let order = try h.runToEnd()
        #expect(order == ["h1", "h2"])
    }

    @Test func aDependencyCancelledBeforeSubmissionLetsItsDependantRun() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.suspend()
        try h.submit([op("a")])
        try h.cancel("a")
        try h.submit([op("b", ids: [h.id("a")])])
        #expect(h.state("b") == .ready)
        try h.suspend("default", false)
        let order = try h.runToEnd()
        #expect(order == ["b"])
    }

    @Test func aDependantSubmittedBeforeItsDependencyWaitsForIt() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("second", after: ["first"], priority: .veryHigh), op("first", priority: .veryLow)])
        let order = try h.runToEnd()
        #expect(order == ["first", "second"])
    }

    @Test func aThreeCycleIsRejectedWhole() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        _ = h.take()
        #expect(throws: SubmissionError.cycle(["a", "c", "b"])) {
            _ = try h.core.submit(Submission([op("a", after: ["c"]), op("b", after: ["a"]), op("c", after: ["b"])]), at: 0)
        }
        #expect(h.core.operationTotal == 0)
        #expect(h.core.effects.isEmpty)
    }

    @Test func barriersRunInTheirPlaceOnFourSlots() throws {
        var h = Harness()
        try h.join("w1", slots: 4)
        try h.submit([op("a"), op("B1", barrier: true), op("c"), op("B2", barrier: true), op("d")])
        #expect(h.dispatchOrder == ["a"])
        let order = try h.runToEnd()
        #expect(order == ["a", "B1", "c", "B2", "d"])
    }

    @Test func aSuspendedQueueDispatchesNothingAndResumeDispatches() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.suspend()
        try h.submit([op("a"), op("b"), op("c")])
        #expect(h.dispatchOrder.isEmpty)
        _ = h.take()
        try h.suspend("default", false)
        let effects = h.take()
        #expect(effects == ["journal queue default max -1 suspended false", "dispatch a→w1", "a dispatched", "dispatch b→w1", "b dispatched"])
    }

    @Test func maxZeroHoldsEverythingUntilRaised() throws {
        var h = Harness()
        try h.join("w1", slots: 3)
        try h.setMax(0)
        try h.submit([op("a"), op("b"), op("empty", empty: true)])
        #expect(h.dispatchOrder.isEmpty && h.state("empty") == .ready)
        try h.setMax(2)
        #expect(h.dispatchOrder == ["a", "b"])
        #expect(h.outcome("empty") == .succeeded)
    }

    @Test func loweringMaxFromFourToOneWhileFourRunStartsNothingUntilThreeFinish() throws {
        var h = Harness()
        try h.join("w1", slots: 8)
        try h.setMax(4)
        try h.submit((1...6).map { op("op\($0)") })
        #expect(h.dispatchOrder == ["op1", "op2", "op3", "op4"])
        for k in 1...4 { try h.start("op\(k)") }
        try h.setMax(1)
        #expect(h.core.queue("default")!.counts.executing == 4)
        for k in 1...3 {
            try h.complete("op\(k)")
            #expect(h.dispatchOrder.count == 4, "nothing starts while \(4 - k) still run")
        }
        try h.complete("op4")
        #expect(h.dispatchOrder == ["op1", "op2", "op3", "op4", "op5"])
    }

    @Test func reprioritisingMovesAnOperationToTheBackOfItsNewLevel() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.suspend()
        try h.submit([op("a"), op("b", priority: .high), op("c")])
        try h.core.setPriority(.high, of: h.id("a"), at: 0)
        try h.step()
        try h.suspend("default", false)
        let order = try h.runToEnd()
        #expect(order == ["b", "a", "c"])
    }
}
