import Testing
@testable import OPQCore

/// SEMANTICS §7: timeouts, retries, lost workers, stale reports.
@Suite struct FailureRuleTests {
    @Test func rule7_anOperationPastItsTimeoutIsKilledAndFailsWithReasonTimeout() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("slow", timeout: 5)])
        h.time = 10
        try h.start("slow")
        #expect(h.core.nextDeadline == 13, "the worker's liveness deadline comes first")
        h.core.heartbeat(from: "w1", at: 14)
        try h.tick(to: 14.9)
        #expect(!h.log.contains { $0.hasPrefix("kill") })
        h.core.heartbeat(from: "w1", at: 15)
        try h.tick(to: 15)
        #expect(h.log.last == "kill slow@w1 timeout")
        try h.complete("slow", AttemptReport(.cancelled, signal: 15))
        #expect(h.outcome("slow") == .failed && h.snapshot("slow").reason == .timeout)
    }

    @Test func rule7_aFailedAttemptIsRetriedWithBackoffAndTheEventsShowEachAttempt() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("flaky", retries: 2)])
        h.time = 1
        try h.complete("flaky", .exited(1))
        #expect(h.state("flaky") == .pending && h.dispatchOrder == ["flaky"])
        #expect(h.core.nextDeadline == 2, "first backoff is 1 s")
        h.core.heartbeat(from: "w1", at: 2)
        try h.tick(to: 2)
        #expect(h.held["flaky"]!.attempt == 2)
        h.time = 3
        try h.complete("flaky", .exited(1))
        h.core.heartbeat(from: "w1", at: 4.9)
        try h.tick(to: 4.9)
        #expect(h.held["flaky"]!.attempt == 2, "second backoff is 2 s")
        h.core.heartbeat(from: "w1", at: 5)
        try h.tick(to: 5)
        #expect(h.held["flaky"]!.attempt == 3)
        try h.complete("flaky", .exited(1))
        #expect(h.outcome("flaky") == .failed && h.snapshot("flaky").attempt == 3)
        #expect(h.log.filter { $0.hasPrefix("flaky") } == [
            "flaky ready", "flaky dispatched", "flaky pending (exit status)", "flaky ready", "flaky dispatched",
            "flaky pending (exit status)", "flaky ready", "flaky dispatched", "flaky finished failed",
        ])
    }

    @Test func rule7_aCancelledOperationIsNeverRetried() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a", retries: 5)])
        try h.cancel("a")
        try h.complete("a", .exited(143))
        #expect(h.outcome("a") == .cancelled && h.dispatchOrder == ["a"])
    }

    @Test func rule7_cancellingDuringBackoffFinishesAtOnce() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a", retries: 5)])
        try h.complete("a", .exited(1))
        try h.cancel("a")
        #expect(h.outcome("a") == .cancelled)
        try h.tick(to: 2)
        #expect(h.dispatchOrder == ["a"])
    }

    @Test func rule7_aSilentWorkerIsLostAndItsOperationsGoBackKeepingTheirPlace() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("first"), op("second")])
        try h.start("first")
        h.time = 1
        try h.join("w2", slots: 1)
        #expect(h.dispatchOrder == ["first", "second"])
        try h.submit([op("third")])
        h.core.heartbeat(from: "w2", at: 3)
        try h.tick(to: 3)  // w1 last heard at 0: three missed beats
        #expect(h.core.workerSnapshots.map(\.id) == ["w2"])
        #expect(h.state("first") == .executing, "w1's lease may still be running")
        h.core.heartbeat(from: "w2", at: 4)
        try h.tick(to: 4)  // lost at 3 + the lease margin (1 s)
        #expect(h.state("first") == .ready && h.snapshot("first").attempt == 1)
        try h.complete("second")
        #expect(h.dispatchOrder == ["first", "second", "first"], "first keeps its place ahead of third")
        #expect(h.held["first"]!.worker == "w2" && h.held["first"]!.attempt == 2)
    }

    @Test func rule7_anOperationThatLosesThreeWorkersFails() throws {
        var h = Harness()
        try h.submit([op("poison")])
        for k in 1...3 {
            try h.join(WorkerID("w\(k)"))
            h.core.workerLost(WorkerID("w\(k)"), at: h.time)
            try h.tick(to: h.time + 4)  // its lease (3 s from when it was last heard) and the margin
        }
        #expect(h.outcome("poison") == .failed && h.snapshot("poison").reason == .lostWorker)
        #expect(h.dispatchOrder == ["poison", "poison", "poison"])
    }

    @Test func rule7_aWorkerThatLeavesGracefullyDoesNotCountAsLost() throws {
        var h = Harness()
        try h.submit([op("a")])
        for k in 1...5 {
            try h.join(WorkerID("w\(k)"))
            h.core.workerLeft(WorkerID("w\(k)"), at: h.time)
            try h.step()
        }
        #expect(h.state("a") == .ready)
    }

    @Test func rule7_lateReportsForAnAttemptGivenToAnotherWorkerAreIgnored() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        h.core.workerLost("w1", at: 0)
        try h.tick(to: 4)
        try h.join("w2")
        #expect(h.held["a"]!.attempt == 2 && h.held["a"]!.worker == "w2")
        // w1 comes back from a network partition and reports attempt 1.
        try h.join("w1")
        let startedLate = h.core.started(h.id("a"), attempt: 1, worker: "w1", at: 0)
        let finishedLate = h.core.finished(h.id("a"), attempt: 1, worker: "w1", .succeeded, at: 0)
        #expect(!startedLate && !finishedLate)
        try h.step()
        #expect(h.state("a") == .dispatched)
        try h.complete("a", .exited(1))
        #expect(h.outcome("a") == .failed)
        #expect(h.log.filter { $0 == "a finished failed" }.count == 1)
    }

    @Test func rule7_aRejoiningWorkerKeepsWhatItStillRunsAndStaleAttemptsAreKilled() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.submit([op("kept"), op("dropped")])
        try h.start("kept")
        // Reconnect: still runs "kept"; "dropped" never arrived.
        h.core.workerJoined("w1", slots: 2, holding: [.init(h.id("kept"), attempt: 1)], at: 1)
        try h.step()
        #expect(h.state("kept") == .executing && h.held["kept"]!.attempt == 1)
        #expect(h.held["dropped"]!.attempt == 2, "requeued and dispatched again")
        // Another worker that reports an attempt it does not own is told to kill it.
        try h.join("w2")
        h.core.workerJoined("w2", slots: 1, holding: [.init(h.id("kept"), attempt: 1)], at: 1)
        try h.step()
        #expect(h.log.contains("kill kept@w2 stale"))
    }

    @Test func rule7_aRequeuedAttemptStillRunningOnItsOldWorkerIsAdoptedBack() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.start("a")
        h.core.workerLost("w1", at: 3)  // the coordinator gave up on w1; no other worker yet
        try h.tick(to: 4)
        #expect(h.state("a") == .ready)
        h.core.workerJoined("w1", slots: 1, holding: [.init(h.id("a"), attempt: 1)], at: 4)
        try h.step()
        #expect(h.state("a") == .executing && h.dispatchOrder == ["a"])
        let accepted = h.core.finished(h.id("a"), attempt: 1, worker: "w1", .succeeded, at: 5)
        #expect(accepted && h.outcome("a") == .succeeded)
    }
}
