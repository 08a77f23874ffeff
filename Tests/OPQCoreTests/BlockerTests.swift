import Testing
@testable import OPQCore

/// Why an operation has not started (`opq show`): every reason the core holds one back, exactly.
@Suite struct BlockerTests {
    @Test func anOperationWaitingForDependenciesNamesTheUnfinishedOnesInOrder() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("a"), op("b"), op("c", after: ["a", "b"])])
        #expect(h.core.blockers(of: h.id("c")) == [.dependencies([h.id("a"), h.id("b")])])
        try h.complete("a")
        #expect(h.core.blockers(of: h.id("c")) == [.dependencies([h.id("b")])])
        #expect(h.core.blockers(of: h.id("c")).map(\.description) == ["waits for op-2"])
    }

    @Test func aSuspendedQueueAndAQueueAtItsMaximumAreNamed() throws {
        var h = Harness()
        try h.join("w1", slots: 4)
        try h.submit([op("running", queue: "q"), op("next", queue: "q")], settings: [("q", QueueSettings(maxConcurrent: 1))])
        #expect(h.state("running") == .dispatched)
        #expect(h.core.blockers(of: h.id("next")) == [.queueAtLimit("q", limit: 1)])
        try h.suspend("q")
        #expect(h.core.blockers(of: h.id("next")) == [.queueSuspended("q"), .queueAtLimit("q", limit: 1)])
        try h.setMax(0, "q")
        try h.suspend("q", false)
        #expect(h.core.blockers(of: h.id("next")).map(\.description)
                == ["its queue 'q' has max concurrent 0: nothing of it starts (opq queue set q --max-concurrent N)"])
    }

    @Test func noLiveWorkerForTheQueueOrTheLabelsIsNamed() throws {
        var h = Harness()
        try h.submit([op("plain"), op("gpu", labels: ["gpu": "1"]), op("render", queue: "render")])
        #expect(h.core.blockers(of: h.id("plain")) == [.noWorker(queue: "default", labels: [:])])
        try h.join("w1", slots: 1, queues: ["default"])
        #expect(h.core.blockers(of: h.id("gpu")) == [.noWorker(queue: "default", labels: ["gpu": "1"])])
        #expect(h.core.blockers(of: h.id("render")).map(\.description) == ["no live worker serves the queue 'render'"])
    }

    @Test func aReadyOperationBehindBusyWorkersIsInLine() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("first"), op("second")])
        #expect(h.state("second") == .ready)
        #expect(h.core.blockers(of: h.id("second")) == [.workersBusy])
        #expect(h.core.blockers(of: h.id("first")).isEmpty, "a dispatched operation has started its way")
        try h.complete("first")
        try h.complete("second")
        #expect(h.core.blockers(of: h.id("second")).isEmpty, "a finished operation waits for nothing")
    }

    @Test func aFailedAttemptWaitingForItsRetryBackoffSaysSo() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("flaky", retries: 1)])
        try h.complete("flaky", AttemptReport(.failed, reason: .exitStatus, exitCode: 1))
        #expect(h.state("flaky") == .pending)
        #expect(h.core.blockers(of: h.id("flaky")) == [.retryBackoff])
    }

    @Test func unknownAndOutOfRangeIdsHaveNoBlockers() {
        let h = Harness()
        #expect(h.core.blockers(of: OperationID(1)).isEmpty)
        #expect(h.core.blockers(of: OperationID(0)).isEmpty)
    }
}
