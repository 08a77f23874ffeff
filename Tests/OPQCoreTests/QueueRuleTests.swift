import Testing
@testable import OPQCore

/// SEMANTICS §4: queues and dispatch order.
@Suite struct QueueRuleTests {
    @Test func rule4_queuesAreCreatedOnFirstUseWithDefaults() throws {
        var h = Harness()
        try h.submit([op("a"), op("b", queue: "encode")])
        #expect(h.core.queueNames == ["default", "encode"])
        #expect(h.core.queue("encode") == Scheduler.QueueSnapshot(name: "encode", maxConcurrent: -1, isSuspended: false,
                                                                  counts: OperationCounts(ready: 1), barriers: 0))
    }

    @Test func rule4_maxConcurrentLimitsDispatchAcrossTheCluster() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.join("w2", slots: 2)
        try h.setMax(3)
        try h.submit((1...6).map { op("op\($0)") })
        #expect(h.dispatchOrder == ["op1", "op2", "op3"])
        try h.complete("op2")
        #expect(h.dispatchOrder == ["op1", "op2", "op3", "op4"])
    }

    @Test func rule4_raisingMaxStartsWaitingOperationsAtOnce() throws {
        var h = Harness()
        try h.join("w1", slots: 4)
        try h.setMax(1)
        try h.submit((1...4).map { op("op\($0)") })
        #expect(h.dispatchOrder == ["op1"])
        try h.setMax(-1)
        #expect(h.dispatchOrder == ["op1", "op2", "op3", "op4"])
    }

    @Test func rule4_aSuspendedQueueStillTakesAddsCancelsAndPriorityChangesWhileRunningOnesContinue() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("running")])
        try h.start("running")
        try h.suspend()
        try h.submit([op("x"), op("y"), op("z")])
        try h.cancel("y")
        try h.core.setPriority(.high, of: h.id("z"), at: 0)
        try h.complete("running")
        #expect(h.dispatchOrder == ["running"] && h.outcome("running") == .succeeded)
        try h.suspend("default", false)
        let order = try h.runToEnd()
        #expect(order == ["running", "z", "x"])
    }

    @Test func rule4_suspensionIsPerQueue() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.suspend("held")
        try h.submit([op("a", queue: "held"), op("b", queue: "free")])
        #expect(h.dispatchOrder == ["b"])
    }

    @Test func rule4_1_integersSnapTowardNormal() {
        let expected: [(Int, QueuePriority)] = [
            (100, .veryHigh), (8, .veryHigh), (7, .high), (4, .high), (3, .normal), (1, .normal), (0, .normal),
            (-3, .normal), (-4, .low), (-7, .low), (-8, .veryLow), (-100, .veryLow),
        ]
        for (value, level) in expected { #expect(QueuePriority(snapping: value) == level, "\(value)") }
        #expect(QueuePriority(parsing: "veryHigh") == .veryHigh && QueuePriority(parsing: "5") == .high)
        #expect(QueuePriority(parsing: "urgent") == nil)
    }

    @Test func rule4_2_withinALevelFirstInFirstOutAcrossSubmissions() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("first")])
        try h.submit([op("a2", priority: .low), op("b2")])
        try h.submit([op("c3"), op("d3", priority: .low)])
        #expect(try h.runToEnd() == ["first", "b2", "c3", "a2", "d3"])
    }

    @Test func rule4_3_readinessBeatsPriority() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("blocker", priority: .veryLow), op("high", after: ["blocker"], priority: .veryHigh), op("low", priority: .low)])
        // The very high operation is not ready, so it holds back nothing behind it.
        #expect(h.dispatchOrder == ["low"])
        let order = try h.runToEnd()
        #expect(order == ["low", "blocker", "high"])
    }

    @Test func rule4_3_anOperationThatBecomesReadyLaterKeepsItsSubmissionPlace() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("dep"), op("early", after: ["dep"]), op("late1"), op("late2")])
        #expect(h.dispatchOrder == ["dep"])
        let order = try h.runToEnd()
        #expect(order == ["dep", "early", "late1", "late2"])
    }

    @Test func rule4_4_aBatchIsOrderedWholeBeforeAnyOfItIsDispatched() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("low", priority: .low), op("normal"), op("high", priority: .high)])
        #expect(h.dispatchOrder == ["high"])
    }

    @Test func rule4_5_changingPriorityMovesToTheBackOfTheNewLevel() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.suspend()
        try h.submit([op("h1", priority: .high), op("n1"), op("h2", priority: .high), op("n2")])
        try h.core.setPriority(.high, of: h.id("n2"), at: 0)
        try h.core.setPriority(.high, of: h.id("h1"), at: 0)  // same level: no move
        try h.step()
        try h.suspend("default", false)
        #expect(try h.runToEnd() == ["h1", "h2", "n2", "n1"])
    }

    @Test func rule4_noPrefetchBeyondFreeSlots() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.submit((1...5).map { op("op\($0)", priority: .low) })
        #expect(h.dispatchOrder == ["op1", "op2"])
        // Work arriving later with higher priority is not stuck behind anything buffered on a worker.
        try h.submit([op("urgent", priority: .veryHigh)])
        try h.complete("op1")
        #expect(h.dispatchOrder == ["op1", "op2", "urgent"])
    }

    @Test func rule4_theNextOperationGoesToTheWorkerWithTheMostFreeSlots() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.join("w2", slots: 2)
        try h.submit((1...3).map { op("op\($0)") })
        #expect(h.held["op1"]!.worker == "w1" && h.held["op2"]!.worker == "w2" && h.held["op3"]!.worker == "w1")
    }

    @Test func rule4_aWorkerServesOnlyTheQueuesItNames() throws {
        var h = Harness()
        try h.join("gpu-only", slots: 2, queues: ["render"])
        try h.submit([op("a", queue: "default"), op("b", queue: "render")])
        #expect(h.dispatchOrder == ["b"])
        try h.join("any", slots: 1)
        #expect(h.dispatchOrder == ["b", "a"] && h.held["a"]!.worker == "any")
    }

    @Test func rule4_labelsRestrictPlacementWithoutBlockingOtherWork() throws {
        var h = Harness()
        try h.join("cpu", slots: 2)
        try h.submit([op("train", priority: .veryHigh, labels: ["gpu": "1"]), op("plain")])
        #expect(h.dispatchOrder == ["plain"], "the gpu operation waits; the plain one does not wait behind it")
        try h.join("gpu", slots: 1, labels: ["gpu": "1", "host": "b"])
        #expect(h.dispatchOrder == ["plain", "train"] && h.held["train"]!.worker == "gpu")
    }

    @Test func rule4_qualityOfServiceDoesNotChangeTheOrder() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        var background = op("background")
        background.qualityOfService = .background
        var interactive = op("interactive")
        interactive.qualityOfService = .userInteractive
        try h.submit([op("first"), background, interactive])
        #expect(try h.runToEnd() == ["first", "background", "interactive"])
    }
}
