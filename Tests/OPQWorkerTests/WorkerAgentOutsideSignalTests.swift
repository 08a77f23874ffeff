import Foundation
import OPQCore
import OPQWire
import Testing
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#endif

/// `scancel JOB` and `systemctl stop` send SIGTERM to a worker and its commands at once: such a command
/// did not fail, its worker is going away, so the attempt is handed back and runs again elsewhere.
@Suite("WorkerAgent: a SIGTERM from outside", .serialized)
struct WorkerAgentOutsideSignalTests {
    /// A worker connected to a fake coordinator that dispatched it operation 1: a command that tells its pid
    /// through a FIFO (opening it waits for the writer), then sleeps. Returns them and the command's pid.
    static func runningCommand() throws -> (FakeCoordinator, AgentHarness, pid_t) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-outside-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("pid").path
        try #require(mkfifo(fifo, 0o600) == 0)
        let coordinator = try FakeCoordinator()
        let harness = AgentHarness(coordinator)
        do {
            try #require(try connect(coordinator) != nil)
            try coordinator.dispatch(1, .command(Command(["sh", "-c", "echo $$ > '\(fifo)'; exec sleep 1000"])))
            let fd = open(fifo, O_RDONLY)
            try #require(fd >= 0, "open \(fifo): errno \(errno)")
            defer { close(fd) }
            var bytes = [UInt8](repeating: 0, count: 32)
            let count = read(fd, &bytes, bytes.count)
            try #require(count > 0)
            let text = String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return (coordinator, harness, try #require(pid_t(text)))
        } catch {
            harness.stopNow()
            coordinator.close()
            throw error
        }
    }

    @Test("a command killed by a SIGTERM just before the worker's own is handed back, not reported failed")
    func killedJustBeforeTheWorkersStop() throws {
        let (coordinator, harness, pid) = try Self.runningCommand()
        defer { harness.stopNow(); coordinator.close() }

        kill(pid, SIGTERM)
        // A heartbeat sent after the kill: the worker's loop has turned since; whether or not it saw the
        // command end yet, it must not report it failed.
        let later = try coordinator.next(timeout: 3) { $0.isHeartbeat || $0.reports.finished(1) != nil }
        #expect(later?.reports.finished(1) == nil, "reported before the grace: \(String(describing: later?.reports))")
        harness.agent.stop(reason: "SIGTERM")
        let (reports, goodbye) = try reportsUntilGoodbye(coordinator)
        let bye = try #require(goodbye)
        #expect(bye.handedBack.map(\.operation) == [1])
        #expect(reports.finished(1) == nil)
        #expect(harness.waitForExit(timeout: 2))
    }

    @Test("a command killed by a SIGTERM after the worker began stopping is handed back")
    func killedWhileDraining() throws {
        let (coordinator, harness, pid) = try Self.runningCommand()
        defer { harness.stopNow(); coordinator.close() }

        harness.agent.stop(reason: "SIGTERM")  // draining: the command may run to its end…
        try #require(try coordinator.register(timeout: 2)?.register?.slots == 0)
        kill(pid, SIGTERM)  // …but the same stop reaches it
        let (reports, goodbye) = try reportsUntilGoodbye(coordinator)
        #expect(try #require(goodbye).handedBack.map(\.operation) == [1])
        #expect(reports.finished(1) == nil)
        #expect(harness.waitForExit(timeout: 2))
    }

    @Test("a command killed by hand while the worker runs on is reported failed (signal 15) after the grace")
    func killedByHand() throws {
        let (coordinator, harness, pid) = try Self.runningCommand()
        defer { harness.stopNow(); coordinator.close() }

        let killedAt = MonotonicClock.now()
        kill(pid, SIGTERM)
        let finished = try #require(coordinator.reports(timeout: 5) { $0.finished(1) != nil }.map(\.report).finished(1))
        #expect(finished.status == .failed && finished.reason == .signal && finished.signal == SIGTERM)
        #expect(MonotonicClock.now() - killedAt >= AgentConnection.outsideSignalGrace)
    }
}
