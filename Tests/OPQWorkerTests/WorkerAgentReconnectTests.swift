import Foundation
import OPQCore
import OPQWire
import Testing
@testable import OPQWorker

@Suite("WorkerAgent: losing and finding the coordinator", .serialized)
struct WorkerAgentReconnectTests {
    @Test("a coordinator silent for liveness × interval is lost: the agent re-registers with what it holds")
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
        #expect(register.held.map { [$0.operation, UInt64($0.attempt)] } == [[3, 2]])

        coordinator.isSilent = false
        try coordinator.welcome(again.identity, interval: 0.1, liveness: 3)
        harness.gate.openGate()
        let finished = try #require(try coordinator.reports { $0.finished(3) != nil }.map(\.report).finished(3))
        #expect(finished.status == .succeeded && finished.attempt == 2)
    }

    @Test("a Finished produced while the coordinator is away is sent after re-registering")
    func finishedWhileAway() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator, interval: 0.1, liveness: 3) != nil)
        try coordinator.dispatch(4, .handler(name: "gate", payload: []))
        try #require(coordinator.reports { $0.started(4) }.map(\.report).started(4))

        // The coordinator hangs; once the agent has given it up (it registers again), the attempt ends.
        coordinator.isSilent = true
        try #require(try coordinator.register(timeout: 3) != nil)
        harness.gate.openGate()
        // The runner stops holding an attempt only after its Finished was handed to the agent.
        try #require(harness.agent.runner.waitUntilIdle(timeout: 5))

        let again = try #require(try coordinator.register(timeout: 3))
        let register = try #require(again.register)
        #expect(register.held.map(\.operation) == [4], "an attempt whose Finished is unsent still counts as held")
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
