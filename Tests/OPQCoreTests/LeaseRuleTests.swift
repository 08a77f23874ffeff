import Testing
@testable import OPQCore

/// SEMANTICS §7, leases: a lost worker's attempts go back to `ready` only once its lease has surely run
/// out on its side — `leaseMargin` after it was declared lost — so no operation runs twice at once.
@Suite struct LeaseRuleTests {
    // The default configuration: 3 s without a heartbeat = lost; its attempts wait 1 s more.

    @Test func rule7_aLostWorkersAttemptGoesBackOnlyWhenItsLeaseMarginIsOver() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.start("a")
        h.time = 1
        try h.join("w2")
        _ = h.take()
        h.core.heartbeat(from: "w2", at: 3)
        try h.tick(to: 3)  // w1 last heard at 0: declared lost now
        #expect(h.core.workerSnapshots.map(\.id) == ["w2"])
        #expect(h.take().isEmpty, "nothing happens to a yet: w1 may still run it until its lease runs out")
        #expect(h.state("a") == .executing && h.core.nextDeadline == 4)
        h.core.heartbeat(from: "w2", at: 3.999)
        try h.tick(to: 3.999)
        #expect(h.take().isEmpty)
        try h.tick(to: 4)
        #expect(h.take() == ["a ready (lost worker)", "dispatch a→w2 #2", "a dispatched"])
        #expect(h.snapshot("a").attempt == 2)
    }

    @Test func rule7_aWorkerLostEarlyKeepsItsAttemptsUntilItsLeaseAndTheMarginAreOver() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.submit([op("a"), op("b")])
        try h.start("a")
        h.core.workerLost("w1", at: 0.5)
        h.time = 0.5
        try h.step()
        try h.join("w2", slots: 1)
        #expect(h.dispatchOrder == ["a", "b"], "a and b stay on w1 until its lease and the margin are over")
        #expect(h.state("a") == .executing && h.state("b") == .dispatched)
        h.core.heartbeat(from: "w2", at: 3.9)
        try h.tick(to: 3.9)
        #expect(h.dispatchOrder == ["a", "b"], "lost early (at 0.5), w1 may run them until 0 + 3 s: then 1 s more")
        h.core.heartbeat(from: "w2", at: 4)
        try h.tick(to: 4)
        #expect(h.dispatchOrder == ["a", "b", "a"], "a (first in order) takes w2's only slot; b waits")
        #expect(h.state("b") == .ready)
    }

    @Test func rule7_aWorkerRejoiningWithinTheMarginDoesNotGetItsFencedAttemptBack() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.start("a")
        _ = h.take()
        h.core.workerLost("w1", at: 3)
        h.time = 3.5
        h.core.workerJoined("w1", slots: 1, holding: [.init(h.id("a"), attempt: 1)], at: 3.5)
        try h.step()
        #expect(h.take() == ["kill a@w1 stale"], "the new session does not own the old session's attempt")
        let late = h.core.finished(h.id("a"), attempt: 1, worker: "w1", .succeeded, at: 3.6)
        #expect(!late, "a finish from the fenced session is ignored")
        h.core.heartbeat(from: "w1", at: 4)
        try h.tick(to: 4)
        #expect(h.take() == ["a ready (lost worker)", "dispatch a→w1 #2", "a dispatched"])
        try h.start("a")
        try h.complete("a")
        #expect(h.outcome("a") == .succeeded && h.log.filter { $0.hasPrefix("a finished") }.count == 1)
    }

    @Test func rule7_aCancelWhileFencedFinishesTheOperationWhenTheLeaseRunsOut() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.start("a")
        h.core.workerLost("w1", at: 3)
        h.time = 3.2
        try h.cancel("a")
        #expect(h.take().filter { $0.hasPrefix("kill") }.isEmpty, "a lost worker is not told")
        #expect(h.state("a") == .executing)
        try h.tick(to: 4)
        #expect(h.outcome("a") == .cancelled)
    }

    @Test func rule7_aTimeoutDuringTheFenceFailsTheAttemptWhenTheLeaseRunsOut() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a", retries: 0, timeout: 3.5)])
        try h.start("a")
        _ = h.take()
        h.core.workerLost("w1", at: 3)
        try h.tick(to: 4)
        #expect(h.take() == ["kill a@w1 timeout", "a finished failed", "job-1 finished"])
        #expect(h.snapshot("a").reason == .timeout)
    }

    @Test func rule7_withoutAMarginALostWorkersAttemptsGoBackAtOnce() throws {
        var configuration = Scheduler.Configuration()
        configuration.leaseMargin = 0
        var h = Harness(configuration: configuration)
        try h.join("w1")
        try h.submit([op("a")])
        _ = h.take()
        h.core.workerLost("w1", at: 0)
        try h.step()
        #expect(h.take() == ["a ready (lost worker)"])
    }
}
