import Testing
@testable import OPQCore

/// Ids and numbers from outside (a client, a worker, a file) reach the core unchecked for existence:
/// every lookup is total, an unknown id is refused or ignored, and nothing changes.
@Suite struct HostileInputTests {
    /// Ids that are no operation or job: 0, just past the last, and the integer extremes (≥ 2^63 used to
    /// become a negative index).
    static let unknownIDs: [UInt64] = [0, 3, 1 << 32, UInt64(Int64.max), 1 << 63, (1 << 63) + 1, UInt64.max - 1, UInt64.max]

    /// A core with one job of two operations, one of them dispatched to `w1`.
    static func harness() throws -> Harness {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a"), op("b", after: ["a"])])
        return h
    }

    @Test(arguments: unknownIDs)
    func lookupsOfAnUnknownIdAnswerNil(_ raw: UInt64) throws {
        let h = try Self.harness()
        #expect(h.core.operation(OperationID(raw)) == nil)
        #expect(h.core.state(of: OperationID(raw)) == nil)
        #expect(h.core.queueName(of: OperationID(raw)) == nil)
        #expect(h.core.dispatchDetails(OperationID(raw)) == nil)
        #expect(h.core.job(JobID(raw == 3 ? 2 : raw)) == nil)
        #expect(h.core.isFinished(job: JobID(raw == 3 ? 2 : raw)) == nil)
    }

    @Test(arguments: unknownIDs)
    func requestsNamingAnUnknownIdAreRefusedAndChangeNothing(_ raw: UInt64) throws {
        var h = try Self.harness()
        _ = h.take()
        let unknown = OperationID(raw)
        #expect(throws: RequestError.unknownOperation(unknown)) { try h.core.cancel(unknown, at: 1) }
        #expect(throws: RequestError.unknownOperation(unknown)) { try h.core.setPriority(.high, of: unknown, at: 1) }
        #expect(throws: RequestError.unknownOperation(unknown)) { try h.core.addDependency(unknown, on: h.id("a"), at: 1) }
        #expect(throws: RequestError.unknownOperation(unknown)) { try h.core.addDependency(h.id("b"), on: unknown, at: 1) }
        #expect(throws: RequestError.unknownOperation(unknown)) { try h.core.removeDependency(unknown, on: h.id("a"), at: 1) }
        #expect(throws: RequestError.unknownOperation(unknown)) { try h.core.removeDependency(h.id("b"), on: unknown, at: 1) }
        let job = JobID(raw == 3 ? 2 : raw)
        #expect(throws: RequestError.unknownJob(job)) { try h.core.cancel(job: job, at: 1) }
        #expect(h.core.prune(job: job) == nil)
        try h.step()
        #expect(h.take().isEmpty, "a refused request has no effect")
    }

    @Test(arguments: unknownIDs)
    func aSubmissionDependingOnAnUnknownIdIsRefused(_ raw: UInt64) throws {
        var h = try Self.harness()
        let refused = #expect(throws: SubmissionError.self) { try h.submit([op("c", ids: [OperationID(raw)])]) }
        guard case .unknownDependency(index: 0, name: "c", reference: .id(OperationID(raw)), suggestion: nil)? = refused else {
            Issue.record("expected unknownDependency, got \(String(describing: refused))")
            return
        }
        #expect(h.core.operationTotal == 2)
    }

    @Test(arguments: unknownIDs)
    func workerReportsAboutAnUnknownIdAreIgnored(_ raw: UInt64) throws {
        var h = try Self.harness()
        let handle = h.core.workerJoined("w2", slots: 1, queues: nil, labels: [:], holding: [], at: 0)
        try h.step()
        _ = h.take()
        for attempt in [0, 1, Int(Int32.max), Int.max, Int.min] {
            let started = h.core.started(OperationID(raw), attempt: attempt, worker: handle, at: 1)
            let finished = h.core.finished(OperationID(raw), attempt: attempt, worker: handle, .succeeded, at: 1)
            #expect(!started && !finished)
            #expect(!h.core.holds(handle, OperationID(raw), attempt: attempt))
        }
        let held = Scheduler.HeldAttempt(OperationID(raw), attempt: 1)
        _ = h.core.workerJoined("w3", slots: 1, queues: nil, labels: [:], holding: [held], at: 2)
        try h.step()
        #expect(h.core.operation(h.id("a"))?.state == .dispatched, "the real attempt is untouched")
    }

    @Test func onlyTheWorkerHoldingTheCurrentAttemptHoldsIt() throws {
        var h = try Self.harness()
        let other = h.core.workerJoined("w2", slots: 1, queues: nil, labels: [:], holding: [], at: 0)
        try h.step()
        let (attempt, worker) = try #require(h.held["a"])
        #expect(worker == "w1")
        let w1 = h.core.workerJoined("w1", slots: 1, queues: nil, labels: [:], holding: [.init(h.id("a"), attempt: attempt)], at: 1)
        try h.step()
        #expect(h.core.holds(w1, h.id("a"), attempt: attempt))
        #expect(!h.core.holds(w1, h.id("a"), attempt: attempt + 1), "a stale or future attempt")
        #expect(!h.core.holds(other, h.id("a"), attempt: attempt), "another worker's attempt")
        #expect(!h.core.holds(w1, h.id("b"), attempt: 1), "an operation not dispatched")
    }

    @Test(arguments: [1e300, .infinity, .nan, -1, 0, Limits.maxSeconds * 2])
    func aTimeoutOutsideTheDocumentedRangeIsRefusedAtSubmission(_ timeout: Double) throws {
        var h = Harness()
        let refused = #expect(throws: SubmissionError.self) { try h.submit([op("a", timeout: timeout)]) }
        guard case .invalidField(index: 0, name: "a", field: "timeout", let problem)? = refused else {
            Issue.record("expected an invalid timeout, got \(String(describing: refused))")
            return
        }
        #expect(problem.contains(timeout > 0 ? "at most \(Int(Limits.maxSeconds)) seconds" : "positive number of seconds"))
        try h.submit([op("b", timeout: Limits.maxSeconds)])
    }

    @Test(arguments: [-1, Limits.maxRetries + 1, Int.max, Int.min])
    func retriesOutsideTheDocumentedRangeAreRefused(_ retries: Int) throws {
        var h = Harness()
        #expect(throws: SubmissionError.self) { try h.submit([op("a", retries: retries)]) }
        try h.submit([op("b", retries: Limits.maxRetries)])
    }

    @Test(arguments: [Int.min, Int(Int32.min), -8, 8, Int(Int32.max), Int.max])
    func anyPriorityIntegerSnapsToALevel(_ value: Int) {
        let level = QueuePriority(snapping: value)
        #expect(level == (value > 0 ? .veryHigh : .veryLow))
    }

    @Test func limitsNameTheValueAndTheRange() {
        #expect(Limits.durationProblem(1e300, name: "--kill-grace") == "--kill-grace must be a number of seconds from 0 to 3200000000, not 1e+300")
        #expect(Limits.durationProblem(.infinity, name: "--heartbeat", positive: true)?.hasPrefix("--heartbeat must be a number of seconds greater than 0") == true)
        #expect(Limits.durationProblem(0, name: "x") == nil)
        #expect(Limits.countProblem(5_000_000_000, name: "--liveness", range: 1...Limits.maxLiveness)
                == "--liveness must be a whole number from 1 to 1000, not 5000000000")
        #expect(Limits.countProblem(3, name: "--liveness", range: 1...Limits.maxLiveness) == nil)
    }
}
