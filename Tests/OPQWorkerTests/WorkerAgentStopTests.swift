import Foundation
import OPQCore
import OPQWire
import Testing
@testable import OPQWorker

@Suite("WorkerAgent: stopping", .serialized)
struct WorkerAgentStopTests {
    @Test("a graceful stop takes no new work, lets running attempts finish, then says Goodbye")
    func gracefulStop() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator) != nil)
        try coordinator.dispatch(1, .handler(name: "gate", payload: []))
        try #require(coordinator.reports { $0.started(1) }.map(\.report).started(1))

        harness.agent.stop(reason: "SIGTERM")
        // It tells the coordinator to send nothing more: a registration with no slots, still holding 1.
        let update = try #require(try coordinator.register(timeout: 2)?.register)
        #expect(update.slots == 0)
        #expect(update.held.map(\.operation) == [1])
        // A dispatch that crossed the stop is handed back, not run. (The Disconnect after it makes the
        // agent register again, which shows it has read the dispatch; it keeps draining across that.)
        try coordinator.dispatch(2, .handler(name: "noop", payload: []))
        try coordinator.send(.disconnect(.missingField("test")))
        let again = try #require(try coordinator.register(timeout: 2))
        #expect(again.register?.slots == 0)
        #expect(again.register?.held.map(\.operation) == [1])
        try coordinator.welcome(again.identity)

        harness.gate.openGate()
        let (reports, goodbye) = try reportsUntilGoodbye(coordinator)
        #expect(reports.finished(1)?.status == .succeeded)
        #expect(reports.finished(2) == nil && !reports.started(2))
        let bye = try #require(goodbye)
        #expect(bye.reason == "SIGTERM")
        #expect(bye.handedBack.map(\.operation) == [2])
        #expect(harness.waitForExit(timeout: 2))
    }

    @Test("a second stop kills running attempts and hands them back in the Goodbye, not as Finished")
    func secondStopHandsBack() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        defer { harness.stopNow() }
        try #require(try connect(coordinator) != nil)
        try coordinator.dispatch(1, .command(Command(["sleep", "1000"])))
        try coordinator.dispatch(2, .handler(name: "gate", payload: []))
        try #require(coordinator.reports { $0.started(1) && $0.started(2) }.count >= 2)

        harness.agent.stop()
        try #require(try coordinator.register(timeout: 2) != nil)
        let stoppedAt = MonotonicClock.now()
        harness.agent.stop()
        let (reports, goodbye) = try reportsUntilGoodbye(coordinator)
        let bye = try #require(goodbye)
        #expect(MonotonicClock.now() - stoppedAt < 1.5)
        #expect(bye.handedBack.map(\.operation).sorted() == [1, 2])
        #expect(reports.finished(1) == nil && reports.finished(2) == nil)
        #expect(harness.waitForExit(timeout: 2))
        #expect(harness.agent.runner.held.isEmpty)
    }

    @Test("stopping twice, or after run() returned, is harmless")
    func stopTwice() throws {
        let coordinator = try FakeCoordinator()
        defer { coordinator.close() }
        let harness = AgentHarness(coordinator)
        try #require(try connect(coordinator) != nil)
        harness.agent.stop()
        harness.agent.stop()
        let bye = try #require(try coordinator.next(timeout: 3) { $0.goodbye != nil }?.goodbye)
        #expect(bye.handedBack.isEmpty)
        #expect(harness.waitForExit(timeout: 2))
        harness.agent.stop(handBack: true)
    }
}
