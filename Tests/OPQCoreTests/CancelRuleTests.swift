import Testing
@testable import OPQCore

/// SEMANTICS §5: cancellation.
@Suite struct CancelRuleTests {
    @Test func rule5_cancellingANotStartedOperationFinishesItAtOnceEvenIfBlockedOrSuspended() throws {
        var h = Harness()
        try h.suspend()
        try h.submit([op("dep"), op("blocked", after: ["dep"]), op("queued")])
        _ = h.take()
        try h.cancel("blocked")
        try h.cancel("queued")
        #expect(h.take() == ["journal cancel blocked", "blocked finished cancelled",
                             "journal cancel queued", "queued finished cancelled"])
        #expect(h.snapshot("blocked").reason == .cancelRequested && h.snapshot("blocked").attempt == 0)
    }

    @Test func rule5_aCancelledOperationReleasesItsDependantsOrCancelsThoseThatRequireSuccess() throws {
        var h = Harness()
        try h.suspend()
        try h.submit([op("a"), op("any", after: ["a"]), op("strict", after: ["a"], requires: .success)])
        try h.cancel("a")
        #expect(h.state("any") == .ready)
        #expect(h.outcome("strict") == .cancelled && h.snapshot("strict").reason == .dependencyFailed)
    }

    @Test func rule5_cancellingARunningOperationTellsTheWorkerAndFinishesWhenItReports() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a"), op("next", after: ["a"])])
        try h.start("a")
        _ = h.take()
        try h.cancel("a")
        #expect(h.take() == ["journal cancel a", "a executing cancelled", "kill a@w1 cancel"], "watchers see isCancelled at once")
        #expect(h.state("a") == .executing && h.state("next") == .pending, "dependants wait until the worker reports")
        try h.complete("a", AttemptReport(.failed, reason: .signal, signal: 15))
        #expect(h.outcome("a") == .cancelled)
        #expect(h.dispatchOrder == ["a", "next"])
    }

    @Test func rule5_aRunningOperationThatCompletesBeforeTheCancelTakesEffectSucceeds() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.cancel("a")  // dispatched, not yet started
        try h.complete("a", .succeeded)
        #expect(h.outcome("a") == .succeeded && h.snapshot("a").isCancelled)
    }

    @Test func rule5_cancellingTwiceSendsOneKill() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.cancel("a")
        try h.cancel("a")
        #expect(h.log.filter { $0.hasPrefix("kill") } == ["kill a@w1 cancel"])
    }

    @Test func rule5_cancellingAFinishedOperationChangesNothing() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.complete("a", .exited(1))
        try h.cancel("a")
        #expect(h.outcome("a") == .failed && !h.snapshot("a").isCancelled)
        #expect(!h.log.contains { $0.hasPrefix("kill") })
    }

    @Test func rule5_cancelAllTakesASnapshotOfTheQueueBarriersIncluded() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.setMax(1)
        try h.submit([op("running"), op("waiting"), op("B", barrier: true), op("after")])
        try h.submit([op("elsewhere", queue: "other")])
        try h.core.cancelAll(inQueue: "default", at: 0)
        try h.step()
        for name in ["waiting", "B", "after"] { #expect(h.outcome(name) == .cancelled, "\(name)") }
        #expect(h.state("running") == .dispatched && h.snapshot("running").isCancelled)
        #expect(h.state("elsewhere") != .finished)
        try h.submit([op("added later")])
        try h.complete("running", AttemptReport(.cancelled))
        #expect(h.dispatchOrder.last == "added later", "operations added afterwards are not affected")
    }

    @Test func rule5_cancellingAJobCancelsEveryUnfinishedOperationOfIt() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("other")])
        let job = try h.submit([op("a"), op("b"), op("c", after: ["b"])])
        try h.core.cancel(job: job.job, at: 0)
        try h.step()
        #expect(["a", "b", "c"].allSatisfy { h.outcome($0) == .cancelled })
        #expect(h.state("other") == .dispatched && !h.snapshot("other").isCancelled)
        #expect(h.log.contains("job-2 finished"))
    }
}
