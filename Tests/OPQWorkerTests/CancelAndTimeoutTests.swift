import Foundation
import OPQCore
import Testing
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#endif

@Suite("Cancel and timeout of commands")
struct CancelAndTimeoutTests {
    /// Starts `script` (which must write a pid line to `$FIFO`) and returns what is needed to check it.
    private func launch(_ script: String, grace: Double = 10, timeout: Double? = nil, in directory: URL) async throws
        -> (CommandOperation, EventLog, SpawnedGroups, pid_t, FIFO, OperationQueue)
    {
        let fifo = try FIFO(in: directory)
        let key = AttemptKey(OperationID(7), attempt: 2)
        let operation = CommandOperation(key: key, commands: [.shell(script, environment: ["FIFO": fifo.path])],
                                         timeout: timeout, killGracePeriod: grace)
        let groups = SpawnedGroups()
        operation.onSpawned = groups.observer
        let (log, queue) = start(operation)
        let line = try #require(await fifo.line(), "the script never reported its background process")
        return (operation, log, groups, try #require(pid_t(line)), fifo, queue)
    }

    @Test("cancel kills the whole process group, grandchild included, within 1 s")
    func cancelKillsGroup() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (operation, log, groups, grandchild, _, _) = try await launch(
            "sleep 1000 & echo $! > \"$FIFO\"; sleep 1000", in: directory)
        defer { groups.killAll(); kill(grandchild, SIGKILL) }
        let pgid = try #require(groups.all.first)
        #expect(processExists(grandchild))

        let cancelledAt = EventLog.now()
        operation.cancel()
        let completion = try #require(await log.completion(operation.key, timeout: 30))
        // Measured where the report reached the sink: the kill path's own latency, not how long this
        // task waited for a thread of the (possibly busy) cooperative pool afterwards.
        let reportedAt = try #require(log.completionArrival(operation.key))
        #expect(reportedAt - cancelledAt < 1, "cancel took \(reportedAt - cancelledAt) s")
        #expect(completion.report.status == .cancelled)
        #expect(completion.report.reason == .cancelRequested)
        #expect(completion.report.signal == SIGTERM)
        #expect(!groupIsAlive(pgid))
        #expect(!processExists(grandchild))
        #expect(operation.isFinished && !operation.isExecuting && operation.isCancelled)
    }

    @Test("a group that ignores SIGTERM is SIGKILLed after the grace period")
    func sigkillAfterGrace() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (operation, log, groups, grandchild, _, _) = try await launch(
            "trap '' TERM; sleep 1000 & echo $! > \"$FIFO\"; sleep 1000", grace: 0.3, in: directory)
        defer { groups.killAll(); kill(grandchild, SIGKILL) }
        let pgid = try #require(groups.all.first)

        let cancelledAt = EventLog.now()
        operation.cancel()
        let completion = try #require(await log.completion(operation.key, timeout: 30))
        let elapsed = try #require(log.completionArrival(operation.key)) - cancelledAt
        #expect(elapsed >= 0.3 && elapsed < 0.8, "took \(elapsed) s (grace 0.3 s + at most 0.5 s, not the 10 s default)")
        #expect(completion.report.status == .cancelled)
        #expect(completion.report.signal == SIGKILL)
        #expect(!groupIsAlive(pgid))
        #expect(!processExists(grandchild))
    }

    @Test("a timeout kills the group and fails with reason timeout")
    func timeout() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (operation, log, groups, grandchild, _, _) = try await launch(
            "sleep 1000 & echo $! > \"$FIFO\"; sleep 1000", timeout: 0.3, in: directory)
        defer { groups.killAll(); kill(grandchild, SIGKILL) }
        let completion = try #require(await log.completion(operation.key, timeout: 30))
        #expect(completion.report.status == .failed)
        #expect(completion.report.reason == .timeout)
        #expect(completion.message == "timed out after 0.3 s")
        #expect(!processExists(grandchild))
    }

    @Test("background processes left behind by a finished command are stopped too")
    func leftoversAreStopped() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (operation, log, groups, grandchild, _, _) = try await launch(
            "sleep 1000 >/dev/null 2>&1 & echo $! > \"$FIFO\"; exit 0", in: directory)
        defer { groups.killAll(); kill(grandchild, SIGKILL) }
        let completion = try #require(await log.completion(operation.key, timeout: 30))
        #expect(completion.report == .succeeded)
        #expect(!processExists(grandchild))
    }

    @Test("cancel before start reports cancelled without starting")
    func cancelBeforeStart() async throws {
        let key = AttemptKey(OperationID(3), attempt: 1)
        let operation = CommandOperation(key: key, commands: [Command(["true"])])
        let log = EventLog()
        operation.sink = log.sink
        operation.cancel()
        let completion = try #require(await log.completion(key, timeout: 1))
        #expect(completion.report.status == .cancelled)
        #expect(completion.startedAt == nil)
        let queue = OperationQueue()
        queue.addOperation(operation)
        #expect(await log.wait(timeout: 0.2) { $0.count > 1 } == false, "no second event")
    }
}
