import Foundation
import OPQCore
import OPQWire
import Testing
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#endif

@Suite("WorkerAgent: registration, orders and reports", .serialized)
struct WorkerAgentTests {
    @Test("registers with its name, slots, queues, labels, handlers, host and pid")
    func registers() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator, name: "agent-register", slots: 3) {
            $0.queues = ["b", "a"]
            $0.labels = ["gpu": "1"]
        }
        defer { harness.stopNow() }

        let received = try #require(try coordinator.register())
        #expect(received.identity != Array("agent-register".utf8), "a random routing id per connection, not the name")
        #expect(received.identity.count == 16)
        let register = try #require(received.register)
        #expect(register.protocolVersion == 1)
        #expect(register.workerName == "agent-register")
        #expect(register.slots == 3)
        #expect(register.hasQueueFilter && register.queueFilter.queues == ["a", "b"])
        #expect(register.labels == ["gpu": "1"])
        #expect(register.held.isEmpty)
        #expect(Set(["noop", "sleep", "sha256", "gate"]).isSubset(of: register.handlers))
        #expect(!register.host.isEmpty)
        #expect(register.pid == UInt32(getpid()))

        try coordinator.welcome(received.identity, interval: 0.1)
        // Welcomed: it keeps the connection up with heartbeats instead of registering again.
        let next = try #require(try coordinator.receive(timeout: 2))
        #expect(next.isHeartbeat)
    }

    @Test("a dispatched command is reported started, then finished succeeded with its stdout tail")
    func dispatchRunsCommand() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator) != nil)

        try coordinator.dispatch(5, .command(.shell("echo hi")))
        let collected = try coordinator.reports { $0.finished(5) != nil }
        let reports = collected.map(\.report)
        let startedAt = try #require(reports.firstIndex { $0.startedRef?.operation == 5 })
        let finishedAt = try #require(reports.firstIndex { $0.finishedReport?.operation == 5 })
        #expect(startedAt < finishedAt)
        let finished = try #require(reports.finished(5))
        #expect(finished.attempt == 1)
        #expect(finished.status == .succeeded)
        #expect(finished.reason == .completed)
        #expect(finished.exitCode == 0)
        let raw = collected[finishedAt].raw
        #expect(String(decoding: finished.stdout.bytes(in: raw), as: UTF8.self) == "hi\n")
    }

    @Test("Kill (cancel) of a running command reports it cancelled within a second")
    func killCancels() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator) != nil)

        try coordinator.dispatch(7, .command(Command(["sleep", "1000"])))
        try #require(coordinator.reports { $0.started(7) }.map(\.report).started(7))
        let killedAt = MonotonicClock.now()
        try coordinator.kill(7, reason: .cancel)
        let finished = try #require(try coordinator.reports { $0.finished(7) != nil }.map(\.report).finished(7))
        #expect(MonotonicClock.now() - killedAt < 1)
        #expect(finished.status == .cancelled)
        #expect(finished.reason == .cancelRequested)
    }

    @Test("Kill with reason timeout reports the attempt failed, reason timeout")
    func killForTimeoutFails() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator) != nil)

        try coordinator.dispatch(8, .command(Command(["sleep", "1000"])))
        try #require(coordinator.reports { $0.started(8) }.map(\.report).started(8))
        try coordinator.kill(8, reason: .timeout)
        let finished = try #require(try coordinator.reports { $0.finished(8) != nil }.map(\.report).finished(8))
        #expect(finished.status == .failed)
        #expect(finished.reason == .timeout)
        #expect(finished.errorMessage.contains("timed out"))
    }

    @Test("an idle worker sends a heartbeat every interval")
    func heartbeatsWhileIdle() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator, interval: 0.1, liveness: 5) != nil)

        let start = MonotonicClock.now()
        var heartbeats = 0
        while heartbeats < 5, let received = try coordinator.receive(timeout: 1) {
            #expect(received.isHeartbeat, "an idle worker sends only heartbeats")
            heartbeats += 1
        }
        #expect(heartbeats == 5)
        #expect(MonotonicClock.now() - start < 1.5)
    }

    @Test("malformed messages from the coordinator are ignored; the connection stays up")
    func malformedIgnored() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator) != nil)

        let invalidDispatch = try Opq_V1_CoordinatorToWorker.orders([.dispatch(.with { $0.operation = 0 })]).serializedBytes() as [UInt8]
        try coordinator.sendRaw([Array("garbage".utf8)])
        try coordinator.sendRaw([Frames.signature, [0xFF, 0xFF, 0xFF]])
        try coordinator.sendRaw([Frames.signature, invalidDispatch])
        try coordinator.sendRaw([Frames.signature])
        try coordinator.dispatch(9, .handler(name: "noop", payload: []))

        let collected = try coordinator.reports { $0.finished(9) != nil }
        #expect(collected.map(\.report).finished(9)?.status == .succeeded)
        #expect(harness.error == nil)
        #expect(!harness.waitForExit(timeout: 0), "the agent keeps running")
    }

    @Test("a handler's result bytes travel in a frame of their own, not as stdout")
    func handlerResult() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("data")
        try Data("abc".utf8).write(to: file)
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator) != nil)

        try coordinator.dispatch(10, .handler(name: "sha256", payload: Array(file.path.utf8)))
        let collected = try coordinator.reports { $0.finished(10) != nil }
        let index = try #require(collected.firstIndex { $0.report.finishedReport?.operation == 10 })
        let finished = try #require(collected[index].report.finishedReport)
        #expect(finished.status == .succeeded)
        #expect(String(decoding: finished.result.bytes(in: collected[index].raw), as: UTF8.self)
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(!finished.hasStdout || finished.stdout.bytes(in: collected[index].raw).isEmpty, "the result is not mixed into stdout")
    }
}
