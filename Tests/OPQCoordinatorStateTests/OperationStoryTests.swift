@testable import OPQCore
import OPQWire
@testable import OPQCoordinator
import Testing

/// Each operation keeps its own story (``StoryBook``): the event log's window does not cut it.
@Suite struct OperationStoryTests {
    @Test func anOldOperationsStoryKeepsItsFirstStepsAfterTheEventLogMovedOn() throws {
        var d = StateDriver(eventHistory: 4)
        _ = try d.register("w1")                          // #1
        _ = try d.submit(1, ["a"])                        // #2 submit: ready, dispatched
        _ = d.turn()                                      // #3
        _ = try d.started("w1", 1, sequence: 1)           // #4
        _ = try d.finished("w1", 1, exitCode: 0, sequence: 2)  // #5
        _ = d.turn()
        // Twenty more operations run: the log (4 events) holds none of a's events any more.
        for k in 0..<20 {
            let op = UInt64(k + 2)
            _ = try d.submit(UInt64(10 + k), ["b\(k)"])
            _ = d.turn()
            _ = try d.started("w1", op, sequence: UInt64(3 + 2 * k))
            _ = try d.finished("w1", op, sequence: UInt64(4 + 2 * k))
            _ = d.turn()
        }
        #expect(d.state.events.history(of: OperationID(1)).events.isEmpty)
        let story = try #require(d.state.story(of: OperationID(1)))
        #expect(story.isComplete)
        #expect(story.omitted == 0)
        #expect(story.entries.map { "\($0.event) ← \($0.cause ?? "")" } == [
            "submitted ← #2 submit", "dispatched ← #2 submit", "started ← #4 worker report", "succeeded ← #5 worker report",
        ])
        #expect(story.entries.map(\.worker) == [nil, "w1", "w1", "w1"])
        #expect(story.entries.allSatisfy { $0.time == 100 })
    }

    @Test func aStoryKeepsItsFirstStepsAndTheLatestAndCountsWhatWentBetween() {
        var book = StoryBook(keptFirst: 3, maxSteps: 5)
        for k in 0..<12 {
            let event = OperationEvent(operation: OperationID(7), job: JobID(1), state: k % 2 == 0 ? .ready : .dispatched,
                                       attempt: k / 2, worker: k % 2 == 0 ? nil : WorkerID("w\(k % 3)"), time: Double(k))
            book.record(event, sequence: UInt64(100 + k), cause: Cause(id: UInt64(k + 1), kind: .workerReport))
        }
        let (steps, dropped) = book.story(of: OperationID(7))!
        #expect(steps.map(\.sequence) == [100, 101, 102, 110, 111])
        #expect(dropped == 7)
        #expect(steps.map(\.worker) == [nil, WorkerID("w1"), nil, nil, WorkerID("w2")])
        #expect(steps[4].cause == Cause(id: 12, kind: .workerReport))
        #expect(book.story(of: OperationID(6)) == nil)
        book.forget(OperationID(7))
        #expect(book.story(of: OperationID(7)) == nil)
    }

    @Test func aStepKeepsEveryFieldItShows() {
        var book = StoryBook()
        let retry = OperationEvent(operation: OperationID(1), job: JobID(1), state: .pending, attempt: 2, worker: WorkerID("w9"),
                                   outcome: nil, reason: .exitStatus, exitCode: 3, signal: nil, retryAt: 12.5, time: 10)
        let killed = OperationEvent(operation: OperationID(1), job: JobID(1), state: .finished, attempt: 3, worker: WorkerID("w9"),
                                    outcome: .failed, reason: .signal, exitCode: nil, signal: 9, retryAt: nil, time: 20, isCancelled: true)
        book.record(retry, sequence: 1, cause: Cause(id: 1 << 40, kind: .timer))
        book.record(killed, sequence: 2, cause: .start)
        let steps = book.story(of: OperationID(1))!.steps
        #expect(steps[0].state == .pending && steps[0].attempt == 2 && steps[0].reason == .exitStatus && steps[0].exitCode == 3)
        #expect(steps[0].signal == nil && steps[0].retryAt == 12.5 && steps[0].time == 10 && steps[0].cause == Cause(id: 1 << 40, kind: .timer))
        #expect(steps[1].state == .finished && steps[1].outcome == .failed && steps[1].reason == .signal && steps[1].signal == 9)
        #expect(steps[1].exitCode == nil && steps[1].retryAt == nil && steps[1].isCancelled && steps[1].worker == WorkerID("w9"))
        #expect(MemoryLayout<StoryBook.Step>.stride == 40)
    }

    @Test func packedStepsGiveBackEveryStepExactlyAtTheExtremes() {
        typealias Step = StoryBook.Step
        let base = (1.8e9 + 0.123456789).bitPattern
        let steps = [
            Step(sequence: 1_000_000, time: 1.8e9 + 0.123456789, packedCause: 12_345 << 8 | 1, retryDelay: 0, status: 0,
                 worker: 0, attempt: 0, state: 0, reason: 0),
            Step(sequence: UInt64.max, time: 0, packedCause: UInt64.max, retryDelay: .greatestFiniteMagnitude, status: .min,
                 worker: .max, attempt: .max, state: 0xFF, reason: 0xFF),
            Step(sequence: 0, time: -1e300, packedCause: 0, retryDelay: 0.25, status: .max, worker: 1, attempt: 1, state: 0x1B, reason: 0x83),
            Step(sequence: 1_000_001, time: .infinity, packedCause: 12_345 << 8 | 1, retryDelay: 0, status: -1, worker: 0, attempt: 3,
                 state: 4, reason: 0),
            Step(sequence: 1_000_002, time: 1.8e9 + 0.123456789 - 1e-6, packedCause: 1, retryDelay: 0, status: 0, worker: 2,
                 attempt: 0, state: 2, reason: 0),
        ]
        var packed = StoryBook.PackedSteps()
        for step in steps { packed.append(step, base: base) }
        #expect(packed.steps(base: base) == steps)
        #expect(packed.count == steps.count)
        packed.remove(at: 2)
        #expect(packed.steps(base: base) == [steps[0], steps[1], steps[3], steps[4]])
        packed.remove(at: 3)
        packed.trim()
        #expect(packed.steps(base: base) == [steps[0], steps[1], steps[3]])
        #expect(packed.bytes.capacity < packed.bytes.count + 16)  // what malloc rounds up only
    }

    @Test func aRunOnceStoryPacksIntoFewBytes() {
        var book = StoryBook()
        let start = 1_800_000_000.5
        let changes: [(OperationState, WorkerID?, Int32?, Outcome?)] = [
            (.pending, nil, nil, nil), (.ready, nil, nil, nil), (.dispatched, WorkerID("w1"), nil, nil), (.executing, WorkerID("w1"), nil, nil),
            (.finished, WorkerID("w1"), 0, .succeeded),
        ]
        for (k, change) in changes.enumerated() {
            let event = OperationEvent(operation: OperationID(200_000), job: JobID(1), state: change.0, attempt: k >= 2 ? 1 : 0,
                                       worker: change.1, outcome: change.3, reason: change.3 == nil ? nil : .exitStatus,
                                       exitCode: change.2, signal: nil, retryAt: nil, time: start + Double(k) * 0.0003)
            book.record(event, sequence: 1_000_000 + UInt64(k) * 400_000, cause: Cause(id: 500_000 + UInt64(k) * 200_000, kind: .workerReport))
        }
        let steps = book.story(of: OperationID(200_000))!.steps
        #expect(steps.map(\.state) == changes.map(\.0))
        #expect(steps.map(\.time) == changes.indices.map { start + Double($0) * 0.0003 })
        #expect(steps.last?.outcome == .succeeded && steps.last?.exitCode == 0 && steps.last?.worker == WorkerID("w1"))
        // 40-byte steps took 200 bytes (and an array of 6 reserved); packed, the five take at most 64.
        #expect(book.packedBytes(of: OperationID(200_000)) <= 64)
    }
}

/// Running output pushed to the watches that asked for it (`Watch.include_output`).
@Suite struct OutputPushStateTests {
    @Test func aChunkGoesToTheSpoolThenAtOnceToEachWatchThatAskedForOutput() throws {
        var d = StateDriver()
        try d.runOneOperation()
        _ = try d.client("alice", 2) { $0.watch.job = 1; $0.watch.includeOutput = true }
        _ = try d.client("bob", 3) { $0.watch.job = 1 }
        _ = try d.client("carol", 4) { $0.watch.queue = "elsewhere"; $0.watch.includeOutput = true }
        _ = d.turn()
        #expect(try d.output("w1", 1, "first\n", sequence: 2) == ["spool 1", #"notice alice output 1#1 stdout @0 "first\n""#])
        #expect(try d.output("w1", 1, stream: .stderr, offset: 0, "oops\n", sequence: 3) == ["spool 1", #"notice alice output 1#1 stderr @0 "oops\n""#])
        // An older attempt's chunk (not the worker's own any more) is neither spooled nor pushed.
        #expect(try d.output("w1", 1, attempt: 2, "stale", sequence: 4) == [])
        // A client with replies waiting skips the piece (it reads the gap from the spool later).
        d.state.keepForLater(try Frames.encode(Opq_V1_CoordinatorToClient.reply(9) { $0.done = Opq_V1_Done() }, to: Array("alice".utf8)),
                             refusal: false)
        #expect(try d.output("w1", 1, offset: 6, "second\n", sequence: 5) == ["spool 1"])
        // After an unwatch nothing more is pushed.
        _ = try d.client("alice", 5) { $0.unwatch.watch = 2 }
        d.state.forgetClient(Array("alice".utf8))
        #expect(try d.output("w1", 1, offset: 13, "third\n", sequence: 6) == ["spool 1"])
    }
}
