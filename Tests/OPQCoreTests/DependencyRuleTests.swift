import Testing
@testable import OPQCore

/// SEMANTICS §3: dependencies.
@Suite struct DependencyRuleTests {
    @Test func rule3_aDependantIsNotReadyUntilItsDependencyFinishedAcrossQueuesAndJobs() throws {
        var h = Harness()
        try h.join("w1", slots: 4)
        try h.submit([op("a", queue: "fetch")])
        try h.submit([op("b", queue: "encode", ids: [h.id("a")])])
        #expect(h.state("b") == .pending && h.dispatchOrder == ["a"])
        try h.complete("a")
        #expect(h.dispatchOrder == ["a", "b"])
    }

    @Test(arguments: [AttemptReport.succeeded, .exited(2), AttemptReport(.cancelled)])
    func rule3_anyOutcomeSatisfiesADependencyByDefault(report: AttemptReport) throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.submit([op("a"), op("b", after: ["a"])])
        if report.status == .cancelled { try h.cancel("a") }
        try h.complete("a", report)
        #expect(h.state("a") == .finished)
        #expect(h.dispatchOrder == ["a", "b"])
    }

    @Test func rule3_requiresSuccessCancelsAndCascadesToRequiresSuccessDependantsOnly() throws {
        var h = Harness()
        try h.join("w1", slots: 4)
        try h.submit([
            op("a"), op("b", after: ["a"], requires: .success), op("c", after: ["b"], requires: .success),
            op("d", after: ["b"]),  // Foundation's rule: any outcome of b will do
        ])
        try h.complete("a", .exited(1))
        #expect(h.outcome("b") == .cancelled && h.snapshot("b").reason == .dependencyFailed)
        #expect(h.outcome("c") == .cancelled && h.snapshot("c").reason == .dependencyFailed)
        #expect(h.dispatchOrder == ["a", "d"])
    }

    @Test func rule3_requiresSuccessOnADependencyThatAlreadyFailedCancelsAtSubmission() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.complete("a", .exited(1))
        try h.submit([op("b", ids: [h.id("a")], requires: .success)])
        #expect(h.outcome("b") == .cancelled && h.dispatchOrder == ["a"])
    }

    @Test func rule3_aLongRequiresSuccessChainCascadesWithoutRecursion() throws {
        var h = Harness()
        let count = 50_000
        var specs = [op("n0")]
        for k in 1..<count { specs.append(op("n\(k)", after: ["n\(k - 1)"], requires: .success)) }
        _ = try h.core.submit(Submission(specs), at: 0)
        _ = h.core.takeEffects()
        h.core.workerJoined("w1", slots: 1, at: 0)
        let dispatched = h.core.takeEffects().compactMap { if case let .dispatch(id, _, _, _) = $0 { id } else { nil } }
        try h.core.cancel(dispatched[0], at: 0)
        h.core.finished(dispatched[0], attempt: 1, worker: "w1", AttemptReport(.cancelled), at: 0)
        #expect(h.core.job(JobID(1))!.counts.cancelled == count)
    }

    @Test func rule3_aDependencyOnAFinishedOperationIsSatisfiedAtOnceAndDuplicatesAreIgnored() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.complete("a")
        try h.submit([op("b", ids: [h.id("a"), h.id("a")]), op("c", after: ["b", "b"])])
        #expect(h.state("b") == .dispatched)
        #expect(h.snapshot("b").dependencies == [h.id("a")])
        #expect(h.snapshot("c").dependencies == [h.id("b")])
        try h.complete("b")
        #expect(h.state("c") == .dispatched)
    }

    @Test func rule3_anUnknownDependencyIsRejectedWithASuggestion() throws {
        var core = Scheduler()
        do {
            _ = try core.submit(Submission([op("fetch"), op("encode", after: ["fetchh"])]), at: 0)
            Issue.record("accepted")
        } catch {
            #expect(error == .unknownDependency(index: 1, name: "encode", reference: .name("fetchh"), suggestion: "fetch"))
            #expect(error.description == "operation 'encode': unknown dependency 'fetchh' (did you mean 'fetch'?)")
        }
        #expect(throws: SubmissionError.unknownDependency(index: 0, name: "x", reference: .id(OperationID(12)), suggestion: nil)) {
            try core.submit(Submission([op("x", ids: [OperationID(12)])]), at: 0)
        }
        #expect(core.operationTotal == 0 && core.effects.isEmpty)
    }

    @Test func rule3_aCycleIsRejectedNamingItsMembersAndNothingIsAccepted() throws {
        var core = Scheduler()
        _ = try core.submit(Submission([op("before")]), at: 0)
        _ = core.takeEffects()
        #expect(throws: SubmissionError.cycle(["self"])) {
            try core.submit(Submission([op("ok"), op("self", after: ["self"])]), at: 0)
        }
        do {
            _ = try core.submit(Submission([op("x"), op("a", after: ["b"]), op("b", after: ["a"])]), at: 0)
            Issue.record("accepted")
        } catch {
            #expect(error.description == "dependency cycle: 'a' → 'b' → 'a'")
        }
        #expect(core.operationTotal == 1 && core.jobCount == 1 && core.effects.isEmpty)
    }

    @Test func rule3_aCycleThroughABarrierIsRejected() throws {
        var core = Scheduler()
        // a waits for x; the barrier waits for a; x (added after the barrier) waits for the barrier.
        #expect(throws: SubmissionError.self) {
            try core.submit(Submission([op("a", after: ["x"]), op("B", barrier: true), op("x")]), at: 0)
        }
        #expect(core.operationTotal == 0)
    }

    @Test func rule3_addingADependencyToAQueuedOperationMakesItWaitAgain() throws {
        var h = Harness()
        try h.suspend()
        try h.submit([op("a"), op("b")])
        #expect(h.state("b") == .ready)
        #expect(try h.core.addDependency(h.id("b"), on: h.id("a"), at: 0))
        try h.step()
        #expect(h.state("b") == .pending)
        try h.join("w1", slots: 2)
        try h.suspend("default", false)
        #expect(h.dispatchOrder == ["a"])
        try h.complete("a")
        #expect(h.dispatchOrder == ["a", "b"])
    }

    @Test func rule3_addingADependencyOnceDispatchedHasNoEffect() throws {
        var h = Harness()
        try h.join("w1", slots: 1)
        try h.submit([op("a"), op("b")])
        #expect(try !h.core.addDependency(h.id("a"), on: h.id("b"), at: 0))
        try h.step()
        #expect(h.state("a") == .dispatched && h.snapshot("a").dependencies.isEmpty)
    }

    @Test func rule3_addingADependencyThatClosesACycleIsRefused() throws {
        var h = Harness()
        try h.submit([op("a"), op("b", after: ["a"]), op("c", after: ["b"])])
        _ = h.take()
        #expect(throws: RequestError.cycle(["a", "c", "b"].map(h.id))) {
            try h.core.addDependency(h.id("a"), on: h.id("c"), at: 0)
        }
        #expect(throws: RequestError.cycle([h.id("a")])) { try h.core.addDependency(h.id("a"), on: h.id("a"), at: 0) }
        #expect(h.core.effects.isEmpty && h.state("a") == .ready)
    }

    @Test func rule3_dependantsOfANewOperationWaitForItFromItsSubmission() throws {
        var h = Harness()
        try h.suspend()
        try h.submit([op("b")])
        #expect(h.state("b") == .ready)
        var a = op("a")
        a.dependants = [h.id("b")]
        try h.submit([a])
        #expect(h.state("b") == .pending && h.snapshot("b").dependencies == [h.id("a")])
        try h.join("w1", slots: 2)
        try h.suspend("default", false)
        #expect(h.dispatchOrder == ["a"])
        try h.complete("a")
        #expect(h.dispatchOrder == ["a", "b"])
    }

    @Test func rule3_aCycleClosedByADependantRefusesTheWholeSubmissionAndChangesNothing() throws {
        // op1 → op2 (op1 depends on op2) exists; op2 is to depend on op3; op3 depends on op1.
        var h = Harness()
        try h.submit([op("op2"), op("op1", after: ["op2"])])
        _ = h.take()
        var op3 = op("op3", ids: [h.id("op1")])
        op3.dependants = [h.id("op2")]
        #expect(throws: SubmissionError.cycle(["op-1", "op3", "op-2"])) { try h.core.submit(Submission([op3]), at: 0) }
        #expect(h.core.operationTotal == 2 && h.core.jobCount == 1 && h.core.effects.isEmpty)
        #expect(h.state("op2") == .ready && h.snapshot("op2").dependencies.isEmpty)
        // Through a barrier too: the new barrier waits for op2, which is to depend on it.
        var barrier = op("B", barrier: true)
        barrier.dependants = [h.id("op2")]
        #expect(throws: SubmissionError.self) { try h.core.submit(Submission([barrier]), at: 0) }
        var unknown = op("x")
        unknown.dependants = [OperationID(99)]
        #expect(throws: SubmissionError.self) { try h.core.submit(Submission([unknown]), at: 0) }
        #expect(h.core.operationTotal == 2 && h.core.effects.isEmpty)
    }

    @Test func rule3_removingTheLastUnfinishedDependencyMakesTheOperationReady() throws {
        // Apple's documented rule; Foundation on Linux has it inverted.
        var h = Harness()
        try h.submit([op("slow"), op("other"), op("b", after: ["slow", "other"])])
        #expect(try h.core.removeDependency(h.id("b"), on: h.id("slow"), at: 0))
        try h.step()
        #expect(h.state("b") == .pending, "still waits for 'other'")
        #expect(try h.core.removeDependency(h.id("b"), on: h.id("other"), at: 0))
        try h.step()
        #expect(h.state("b") == .ready)
        #expect(h.snapshot("b").dependencies.isEmpty)
    }
}
