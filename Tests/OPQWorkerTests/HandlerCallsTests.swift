import Foundation
import OPQCore
import Testing
@testable import OPQWorker

/// An operation made of several handler calls (`Work.handlers`, a remote `BlockOperation`) on the
/// runner: the blocks run at once, the results come back in order, a failing block is named, and a
/// cancel reaches every block.
@Suite("Handler calls on the runner")
struct HandlerCallsTests {
    private let key = AttemptKey(OperationID(1), attempt: 1)

    private func request(_ calls: [HandlerCall]) -> RunRequest {
        RunRequest(key, name: "blocks", work: .handlers(calls))
    }

    /// A registry whose `meet` handler returns only once the block with the other payload (`a` ↔ `b`)
    /// runs too: two blocks run one after the other would each wait alone and fail.
    private func meetingRegistry() -> HandlerRegistry {
        let registry = HandlerRegistry.withBuiltins()
        let arrived = ["a": DispatchSemaphore(value: 0), "b": DispatchSemaphore(value: 0)]
        registry.register("meet", returning: { context in
            let me = context.payloadText ?? ""
            let other = me == "a" ? "b" : "a"
            arrived[me]?.signal()
            guard arrived[other]?.wait(timeout: .now() + 30) == .success else {
                throw HandlerError("block \(me) ran alone: the blocks did not run at once")
            }
            arrived[other]?.signal()  // leave it for a second look by the other block
            return Array("met \(me)".utf8)
        })
        registry.register("fail", returning: { _ in throw HandlerError("disk on fire") })
        return registry
    }

    @Test("the blocks run at once and their results come back in order, as a JSON array")
    func blocksRunAtOnce() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", handlers: meetingRegistry(), events: log.sink)
        runner.run(request([HandlerCall("meet", text: "a"), HandlerCall("meet", text: "b"), HandlerCall("noop")]))
        let completion = try #require(await log.completion(key, timeout: 60))
        #expect(completion.report == .succeeded, "\(completion.message ?? "")")
        #expect(HandlerCall.results(in: completion.result) == [Array("met a".utf8), Array("met b".utf8), []])
    }

    @Test("a failing block fails the operation, naming the block, its handler and why")
    func failingBlockIsNamed() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", handlers: meetingRegistry(), events: log.sink)
        runner.run(request([HandlerCall("noop"), HandlerCall("fail"), HandlerCall("noop")]))
        let completion = try #require(await log.completion(key))
        #expect(completion.report.status == .failed)
        #expect(completion.report.reason == .error)
        let message = try #require(completion.message)
        #expect(message.hasPrefix("block 2 of 3 (handler 'fail') failed: "), "\(message)")
        #expect(message.contains("disk on fire"), "\(message)")
    }

    @Test("a block whose handler the worker lacks fails the operation, naming the block")
    func unknownHandlerBlockIsNamed() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(request([HandlerCall("noop"), HandlerCall("nosuch")]))
        let completion = try #require(await log.completion(key))
        #expect(completion.report.status == .failed)
        #expect(completion.message?.hasPrefix("block 2 of 2 (handler 'nosuch') failed: no handler 'nosuch' registered on worker w1") == true,
                "\(completion.message ?? "")")
    }

    @Test("a cancel reaches every running block and the attempt reports cancelled")
    func cancelReachesEveryBlock() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(request([HandlerCall("sleep", text: "1000"), HandlerCall("sleep", text: "1000")]))
        #expect(await log.started(key))
        #expect(runner.cancel(OperationID(1), attempt: 1))
        let completion = try #require(await log.completion(key, timeout: 30))
        #expect(completion.report.status == .cancelled)
    }

    @Test("a timeout reaches every block: failed, reason timeout")
    func timeoutReachesEveryBlock() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        var timed = request([HandlerCall("sleep", text: "1000"), HandlerCall("noop")])
        timed.timeout = 0.2
        runner.run(timed)
        let completion = try #require(await log.completion(key, timeout: 30))
        #expect(completion.report.status == .failed)
        #expect(completion.report.reason == .timeout)
    }
}
