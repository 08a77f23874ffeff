import Foundation
import OPQCore
import OPQWire
import Testing
@testable import OPQWorker

@Suite("WorkerAgent: losing and finding the coordinator", .serialized)
struct WorkerAgentReconnectTests {
    @Test("a coordinator silent for liveness × interval is lost: the lease ends, the attempt is stopped unreported, the agent re-registers holding nothing")
    func silentCoordinator() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator, interval: 0.1, liveness: 3) != nil)
        try coordinator.dispatch(3, attempt: 2, .handler(name: "gate", payload: []))
        try #require(coordinator.reports { $0.started(3) }.map(\.report).started(3))

        coordinator.isSilent = true
        let silentAt = MonotonicClock.now()
        let again = try #require(try coordinator.register(timeout: 3))
        #expect(MonotonicClock.now() - silentAt >= 0.15, "not long before liveness × interval (0.3 s)")
        let register = try #require(again.register)
        #expect(register.held.isEmpty, "the lease ended: the attempt was stopped and is no longer held")
        #expect(harness.agent.runner.held.isEmpty)

        coordinator.isSilent = false
        try coordinator.welcome(again.identity, interval: 0.1, liveness: 3)
        try coordinator.dispatch(5, .handler(name: "gate", payload: []))
        harness.gate.openGate()
        let collected = try coordinator.reports { $0.finished(5) != nil }.map(\.report)
        #expect(collected.finished(5)?.status == .succeeded)
        #expect(collected.finished(3) == nil, "the attempt stopped by the lease is not reported")
    }

    @Test("messages that echo only an old lease request renew nothing: the lease ends, the command's group is killed")
    func staleEchoesDoNotRenewTheLease() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator, interval: 0.1, liveness: 3) != nil)
        let pidFile = coordinator.directory.appendingPathComponent("pid").path
        try coordinator.dispatch(6, .command(Command(["/bin/sh", "-c", "echo $$ > \"$0\"; exec sleep 30", pidFile])))
        try #require(coordinator.reports { $0.started(6) }.map(\.report).started(6))

        // Heartbeats keep arriving every 0.1 s, but all echo the same old request.
        coordinator.frozenEcho = coordinator.latestLeaseRequest
        let frozenAt = MonotonicClock.now()
        let again = try #require(try coordinator.register(timeout: 5))
        #expect(MonotonicClock.now() - frozenAt >= 0.2, "not before the lease (0.3 s from the echoed request) ended")
        #expect(again.register?.held.isEmpty == true)
        let pid = try #require(pid_t((try String(contentsOfFile: pidFile, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, 0) != 0 && errno == ESRCH, "the command was killed and reaped before the worker registered again")
        coordinator.frozenEcho = nil
        try coordinator.welcome(again.identity, interval: 0.1, liveness: 3)
        let reports = try coordinator.reports(timeout: 1) { $0.finished(6) != nil }.map(\.report)
        #expect(reports.finished(6) == nil, "the killed attempt is not reported")
    }

    @Test("a Finished produced within the lease but never acknowledged is sent again after re-registering")
    func finishedWhileAway() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator, interval: 0.1, liveness: 3) != nil)
        try coordinator.dispatch(4, .handler(name: "gate", payload: []))
        try #require(coordinator.reports { $0.started(4) }.map(\.report).started(4))

        // The coordinator hangs; the attempt ends within the lease, but its Finished is never acknowledged.
        coordinator.isSilent = true
        harness.gate.openGate()
        // The runner stops holding an attempt only after its Finished was handed to the agent.
        try #require(harness.agent.runner.waitUntilIdle(timeout: 5))

        let again = try #require(try coordinator.register(timeout: 3))
        let register = try #require(again.register)
        #expect(register.held.map(\.operation) == [4], "an attempt whose Finished is unconfirmed still counts as held")
        coordinator.isSilent = false
        try coordinator.welcome(again.identity, interval: 0.1, liveness: 3)
        let collected = try coordinator.reports { $0.finished(4) != nil }
        #expect(collected.map(\.report).finished(4)?.status == .succeeded)
    }

    @Test("Disconnect from the coordinator makes the agent reconnect and register again")
    func disconnectReconnects() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator) != nil)

        try coordinator.send(.disconnect(.missingField("WorkerMessage.body")))
        let again = try #require(try coordinator.register(timeout: 3))
        #expect(again.register?.held.isEmpty == true)
        try coordinator.welcome(again.identity)
    }

    @Test("with no coordinator at all, a stop ends run() at once")
    func stopWithoutCoordinator() throws {
        let coordinator = try FakeCoordinator()
        coordinator.shutDown()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        harness.agent.stop()
        #expect(harness.waitForExit(timeout: 2))
        #expect(harness.error == nil)
    }

    @Test("an invalid endpoint makes run() throw instead of retrying forever")
    func invalidEndpoint() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator) { $0.coordinator = "nonsense://here" }
        #expect(harness.waitForExit(timeout: 2))
        #expect(harness.error != nil)
    }
}
