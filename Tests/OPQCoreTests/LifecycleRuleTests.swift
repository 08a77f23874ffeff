import Testing
@testable import OPQCore

/// SEMANTICS §1 (operations), §2 (lifecycle), §8 (counts and progress), §9 (errors).
@Suite struct LifecycleRuleTests {
    @Test func rule1_idsAreContiguousInBatchOrderAndStableAcrossJobs() throws {
        var h = Harness()
        let first = try h.submit([op("a"), op("b"), op("c")])
        let second = try h.submit([op("a")])  // names are unique within a job, not across jobs
        #expect(first.operations.map(\.rawValue) == [1, 2, 3])
        #expect(second.operations.map(\.rawValue) == [4])
        #expect(first.job != second.job)
        #expect(h.core.operation(OperationID(2))!.name == "b")
    }

    @Test func rule1_aFinishedOperationNeverRunsAgain() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.start("a")
        try h.complete("a")
        // A duplicate report of the same attempt is ignored.
        let lateFinish = h.core.finished(h.id("a"), attempt: 1, worker: "w1", .exited(1), at: 1)
        let lateStart = h.core.started(h.id("a"), attempt: 1, worker: "w1", at: 1)
        #expect(!lateFinish && !lateStart)
        try h.step()
        #expect(h.outcome("a") == .succeeded && h.dispatchOrder == ["a"])
    }

    @Test func rule1_anEmptyOperationIsAJoinPointThatNeedsNoWorker() throws {
        var h = Harness()
        try h.submit([op("join", empty: true)])  // no worker at all
        #expect(h.outcome("join") == .succeeded)
        #expect(h.take() == ["journal submit job-1", "join ready", "join finished succeeded", "job-1 finished"])
    }

    @Test func rule1_severalCommandsAreOneOperationOnOneWorker() throws {
        var h = Harness()
        try h.join("w1", slots: 4)
        var spec = op("multi")
        spec.work = .commands([Command(["a"]), Command(["b"]), Command(["c"])])
        try h.submit([spec])
        #expect(h.dispatchOrder == ["multi"])
        #expect(h.core.workerSnapshots[0].operations == [h.id("multi")])
    }

    @Test func rule2_statesAreEnteredInOrderWithOneEventEach() throws {
        var h = Harness()
        try h.submit([op("a"), op("b", after: ["a"])])
        try h.join("w1")
        h.time = 5
        try h.start("a")
        h.time = 7
        try h.complete("a", .exited(0))
        #expect(h.log.filter { $0.hasPrefix("a ") } == ["a ready", "a dispatched", "a executing", "a finished succeeded"])
        #expect(h.log.filter { $0.hasPrefix("b ") } == ["b pending", "b ready", "b dispatched"])
    }

    @Test func rule2_theFinishedEventCarriesOutcomeExitStatusWorkerAndTime() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.start("a")
        h.time = 42
        let (attempt, worker) = h.held["a"]!
        h.core.finished(h.id("a"), attempt: attempt, worker: worker, .exited(3), at: h.time)
        let events = h.core.takeEffects().compactMap { effect -> OperationEvent? in
            if case .notify(let event) = effect, event.state == .finished { event } else { nil }
        }
        #expect(events == [OperationEvent(operation: h.id("a"), job: JobID(1), state: .finished, attempt: 1, worker: "w1",
                                          outcome: .failed, reason: .exitStatus, exitCode: 3, signal: nil, retryAt: nil, time: 42)])
    }

    @Test func rule2_isCancelledIsAFlagThatStays() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a")])
        try h.start("a")
        try h.cancel("a")
        #expect(h.snapshot("a").isCancelled && h.state("a") == .executing)
        try h.complete("a", AttemptReport(.cancelled, signal: 15))
        #expect(h.snapshot("a").isCancelled && h.outcome("a") == .cancelled)
    }

    @Test func rule8_operationCountAndListAreUnfinishedInSubmissionOrderWithoutBarriers() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a"), op("b", priority: .veryHigh), op("B", barrier: true), op("c")])
        try h.submit([op("d")])
        #expect(h.core.queue("default")!.operationCount == 4)
        #expect(h.core.operations(inQueue: "default") == ["a", "b", "c", "d"].map(h.id))
        try h.start("b")
        try h.complete("b")
        #expect(h.core.operations(inQueue: "default") == ["a", "c", "d"].map(h.id))
        #expect(h.core.queue("default")!.operationCount == 3)
    }

    @Test func rule8_progressCountsByOutcomePerJobAndQueue() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        let job = try h.submit([op("ok"), op("bad"), op("gone"), op("later", after: ["ok"]), op("B", barrier: true)])
        try h.cancel("gone")
        try h.complete("ok")
        try h.complete("bad", .exited(1))
        let progress = h.core.job(job.job)!
        #expect(progress.counts == OperationCounts(dispatched: 1, succeeded: 1, failed: 1, cancelled: 1))
        #expect(progress.counts.total == 4 && !progress.isFinished)
        #expect(h.core.queue("default")!.counts == progress.counts)
        try h.complete("later")
        #expect(!h.core.job(job.job)!.isFinished, "the barrier is part of the job")
        try h.complete("B")
        #expect(h.core.job(job.job)!.isFinished)
        #expect(h.core.job(job.job)!.counts == OperationCounts(succeeded: 2, failed: 1, cancelled: 1))
    }

    @Test func rule8_waitForAllIncludesBarriersAndOperationsAddedWhileWaiting() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a"), op("B", barrier: true)])
        try h.complete("a")
        #expect(h.core.queue("default")!.operationCount == 0)
        #expect(!h.core.isIdle(queue: "default"), "the barrier is still unfinished")
        try h.complete("B")
        #expect(h.core.isIdle(queue: "default"))
        try h.submit([op("c")])
        #expect(!h.core.isIdle(queue: "default"))
    }

    @Test func rule9_aDuplicateNameIsRefusedAndNothingChanges() throws {
        var core = Scheduler()
        #expect(throws: SubmissionError.duplicateName("a", index: 2, firstIndex: 0)) {
            try core.submit(Submission([op("a"), op("b"), op("a")]), at: 0)
        }
        #expect(core.operationTotal == 0 && core.effects.isEmpty && core.jobCount == 0)
    }

    @Test func rule9_invalidFieldsAndSettingsAreRefusedWithAClearError() throws {
        var core = Scheduler()
        var empty = op("x")
        empty.work = .command(Command([]))
        let cases: [(Submission, String)] = [
            (Submission([]), "the submission holds no operation"),
            (Submission([op("r", retries: -1)]), "operation 'r': retries must be 0 or more, not -1"),
            (Submission([op("t", timeout: 0)]), "operation 't': timeout must be a positive number of seconds, not 0.0"),
            (Submission([empty]), "operation 'x': command must name a program"),
            (Submission([op("q")], queueSettings: [("enc", QueueSettings(maxConcurrent: -2))]),
             "queue 'enc': maxConcurrent must be -1 (no limit), 0 (hold) or positive, not -2"),
        ]
        for (submission, message) in cases {
            do {
                _ = try core.submit(submission, at: 0)
                Issue.record("accepted: \(message)")
            } catch {
                #expect(error.description == message)
            }
        }
        #expect(core.operationTotal == 0 && core.effects.isEmpty && core.queueNames.isEmpty)
    }

    @Test func rule9_aRefusedRequestChangesNothing() throws {
        var h = Harness()
        try h.submit([op("a")])
        _ = h.take()
        #expect(throws: RequestError.unknownOperation(OperationID(99))) { try h.core.cancel(OperationID(99), at: 0) }
        #expect(throws: RequestError.unknownJob(JobID(7))) { try h.core.cancel(job: JobID(7), at: 0) }
        #expect(throws: RequestError.unknownQueue("nope")) { try h.core.cancelAll(inQueue: "nope", at: 0) }
        #expect(throws: RequestError.invalidMaxConcurrent(queue: "default", value: -5)) {
            try h.core.setMaxConcurrent(-5, queue: "default", at: 0)
        }
        #expect(h.core.effects.isEmpty)
        #expect(h.core.queue("default")!.maxConcurrent == -1)
    }
}
