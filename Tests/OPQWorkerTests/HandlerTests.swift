import Foundation
import OPQCore
import Testing
@testable import OPQWorker

@Suite("Handlers on the runner")
struct HandlerTests {
    private func key(_ id: UInt64) -> AttemptKey { AttemptKey(OperationID(id), attempt: 1) }

    private func handler(_ name: String, _ payload: String = "", id: UInt64, timeout: Double? = nil) -> RunRequest {
        RunRequest(key(id), name: "op\(id)", work: .handler(name: name, payload: Array(payload.utf8)), timeout: timeout)
    }

    @Test("noop succeeds at once")
    func noop() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 2, worker: "w1", events: log.sink)
        #expect(runner.run(handler("noop", id: 1)) == .accepted)
        let completion = try #require(await log.completion(key(1)))
        #expect(completion.report == .succeeded)
        #expect(completion.startedAt != nil)
        #expect(runner.held.isEmpty)
    }

    @Test("sleep is cancelled promptly")
    func sleepCancelled() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(handler("sleep", "1000", id: 1))
        #expect(await log.started(key(1)))
        let cancelledAt = EventLog.now()
        #expect(runner.cancel(OperationID(1), attempt: 1))
        let completion = try #require(await log.completion(key(1), timeout: 30))
        // When the completion reached the sink, not when this task resumed (a busy test pool delays that).
        let reportedAt = try #require(log.completionArrival(key(1)))
        #expect(reportedAt - cancelledAt < 1, "cancel took \(reportedAt - cancelledAt) s")
        #expect(completion.report.status == .cancelled)
        #expect(runner.cancel(OperationID(1), attempt: 1) == false, "no longer held")
    }

    @Test("a handler past its timeout fails with reason timeout")
    func handlerTimeout() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(handler("sleep", "1000", id: 1, timeout: 0.2))
        let completion = try #require(await log.completion(key(1), timeout: 30))
        #expect(completion.report.status == .failed)
        #expect(completion.report.reason == .timeout)
    }

    @Test("sha256 of a file equals sha256sum's digest, with progress")
    func sha256() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("data.bin")
        try Data((0 ..< 3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: file)
        let reference = try #require(await runCommands([Command(["sha256sum", file.path])]))
        let expected = String(reference.stdoutText.prefix(64))

        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(handler("sha256", file.path, id: 1))
        let completion = try #require(await log.completion(key(1)))
        #expect(completion.report == .succeeded)
        #expect(String(decoding: completion.result, as: UTF8.self) == expected)
        let progress = log.all.compactMap { if case .progress(_, let fraction, _) = $0 { fraction } else { nil } }
        #expect(progress.count == 3 && progress.last == 1)
    }

    @Test("sha256 of a missing file fails naming the call and errno")
    func sha256Missing() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(handler("sha256", "/nonexistent/file", id: 1))
        let completion = try #require(await log.completion(key(1)))
        #expect(completion.report.reason == .error)
        #expect(completion.message?.contains("open failed: No such file or directory (ENOENT) — /nonexistent/file") == true)
    }

    @Test("an unknown handler fails with a clear message")
    func unknownHandler() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(handler("nope", id: 1))
        let completion = try #require(await log.completion(key(1)))
        #expect(completion.report.status == .failed)
        #expect(completion.report.reason == .error)
        #expect(completion.message == "no handler 'nope' registered on worker w1 (it has: noop, sha256, sleep)")
        #expect(String(decoding: completion.stderr, as: UTF8.self).contains("no handler 'nope'"))
    }

    @Test("a bad payload fails with the handler's message")
    func badPayload() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(handler("sleep", "soon", id: 1))
        let completion = try #require(await log.completion(key(1)))
        #expect(completion.report.reason == .error)
        #expect(completion.message?.contains("payload must be a number of seconds") == true)
    }

    @Test("a plain Foundation Operation works as a handler")
    func plainOperation() async throws {
        let registry = HandlerRegistry()
        let ran = Once()
        registry.register("block") { _ in BlockOperation { _ = ran.claim() } }
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", handlers: registry, events: log.sink)
        runner.run(handler("block", id: 1))
        let completion = try #require(await log.completion(key(1)))
        #expect(completion.report == .succeeded)
        #expect(ran.claim() == false, "the block ran")
    }

    @Test("a plain Foundation Operation reports progress through its context")
    func plainOperationProgress() async throws {
        let registry = HandlerRegistry()
        registry.register("half") { context in BlockOperation { context.reportProgress(fraction: 0.5, message: "half") } }
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", handlers: registry, events: log.sink)
        runner.run(handler("half", id: 1))
        let completion = try #require(await log.completion(key(1)))
        #expect(completion.report == .succeeded)
        let progress = log.all.compactMap { if case .progress(_, let fraction, let message) = $0 { "\(fraction) \(message ?? "")" } else { nil } }
        #expect(progress == ["0.5 half"])
    }

    @Test("a handler that throws fails with its error")
    func throwingHandler() async throws {
        final class Failing: HandlerOperation, @unchecked Sendable {
            override func execute() throws { throw HandlerError("disk on fire") }
        }
        let registry = HandlerRegistry()
        registry.register("fail") { Failing(context: $0) }
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", handlers: registry, events: log.sink)
        runner.run(handler("fail", id: 1))
        let completion = try #require(await log.completion(key(1)))
        #expect(completion.message == "handler 'fail' failed: disk on fire")
    }
}
