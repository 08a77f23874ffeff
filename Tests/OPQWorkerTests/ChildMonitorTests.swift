import Foundation
import OPQCore
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import OPQWorker

/// The worker's child monitor drains and reaps every command (one epoll set); output that waits for the
/// output window (flow control) must stop only its own command's pipes (``ChildMonitor``).
@Suite("ChildMonitor: one epoll set for every command")
struct ChildMonitorTests {
    @Test("a command flooding a full output window delays neither another command's end nor its own reaping")
    func aFullWindowStopsOnlyItsOwnCommandsPipes() async throws {
        // Capacity 1: the first piece passes alone, every later one waits for a release.
        let window = OutputWindow(capacity: 1)
        let groups = SpawnedGroups()
        defer { groups.killAll() }

        let floodKey = AttemptKey(OperationID(1), attempt: 1)
        let flood = CommandOperation(key: floodKey, commands: [Command(["yes"])], killGracePeriod: 10)
        flood.outputWindow = window
        flood.onSpawned = groups.observer
        let floodReaped = Flag()
        flood.onReaped = { _ in floodReaped.raise() }
        let (floodLog, _) = start(flood)
        func outputs(_ events: [AttemptEvent]) -> Int { events.count(where: { if case .output = $0 { true } else { false } }) }
        #expect(await floodLog.wait { outputs($0) >= 1 })

        // Another command (no output: it needs no room) starts and ends while the flood's output waits.
        let quickKey = AttemptKey(OperationID(2), attempt: 1)
        let quick = CommandOperation(key: quickKey, commands: [.shell("exit 3")], killGracePeriod: 10)
        quick.outputWindow = window
        quick.onSpawned = groups.observer
        let (quickLog, _) = start(quick)
        let quickEnd = try #require(await quickLog.completion(quickKey))
        #expect(quickEnd.report == AttemptReport(.failed, reason: .exitStatus, exitCode: 3))

        // The flood is stopped: its group is reaped although its output still waits for the window,
        // so it has not ended yet.
        flood.cancel()
        #expect(await floodReaped.wait())
        #expect(outputs(floodLog.all) == 1)
        #expect(floodLog.completionArrival(floodKey) == nil)

        // Room again: the parked piece goes on; once the window opens the rest is read and the flood ends.
        window.release(window.bytesInFlight)
        #expect(await floodLog.wait { outputs($0) >= 2 })
        window.open()
        let floodEnd = try #require(await floodLog.completion(floodKey))
        #expect(floodEnd.report.status == .cancelled)
        #expect(floodEnd.stdout.starts(with: Array("y\ny\n".utf8)))
    }

    /// A worker agent's monitor is serviced by its socket thread (``ChildMonitor/service(timeout:)``); the
    /// worker holds the pipes' write ends until the group is reaped, so a command closing its output makes
    /// no wake-up of its own: the exit is the one event, and the end is reported once, from the servicing
    /// thread.
    @Test("a command that closes its output and runs on: nothing to service until it exits, then one end from the caller's thread")
    func closingOutputWakesNobodyAndTheEndComesFromTheServicingThread() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let closed = try FIFO(in: directory)
        let go = try FIFO(in: directory)
        let monitor = try ChildMonitor()
        let ends = EndRecorder()
        let group = try ChildProcessGroup.spawn(
            .shell("echo before; exec >&- 2>&-; echo closed > \(closed.path); read line < \(go.path); exit 5"),
            niceness: 0, killGracePeriod: 10, monitor: monitor) { ends.record($0) }
        defer { kill(-group.pid, SIGKILL) }

        // The output before the close is read; the close itself leaves nothing ready.
        #expect(closed.waitForLine(timeout: 10) == "closed")
        monitor.service(timeout: 0)
        #expect(!isReadable(monitor.descriptor, timeout: 0), "closing the output woke the monitor")
        #expect(ends.count == 0)

        go.write("go\n")
        let deadline = Date().addingTimeInterval(10)
        while ends.count == 0, Date() < deadline { monitor.service(timeout: 100) }
        let end = try #require(ends.first)
        #expect(end.outcome.termination == .exited(5))
        #expect(String(decoding: end.outcome.stdout.bytes, as: UTF8.self) == "before\n")
        #expect(end.onServicingThread, "the end was reported from another thread")
        monitor.service(timeout: 50)
        #expect(ends.count == 1)
    }

    @Test("a member that outlives its leader and writes after the exit: its output is read, the end comes once when it is gone")
    func outputWrittenAfterTheLeaderExitedIsRead() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ready = try FIFO(in: directory)
        // The member ignores the SIGTERM sent when the leader exits (the leader waits until it does); the
        // SIGKILL would come after 10 s.
        let script = "(trap '' TERM; echo > \(ready.path); sleep 0.3; echo late) & read line < \(ready.path); echo early; exit 0"
        let end = try #require(await runCommands([.shell(script)]))
        #expect(end.report.status == .succeeded)
        #expect(end.stdoutText == "early\nlate\n")
    }

    @Test("a process that left the group holds the output open: the end comes after the drain grace period")
    func anOutsiderHoldingTheOutputDelaysTheEndOnlyByTheGracePeriod() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let left = try FIFO(in: directory)
        // The leader exits only once the outsider has left the group (else the SIGTERM sent to what is left
        // of the group when the leader exits could end it first); the outsider would hold the output 60 s.
        let script = "setsid sh -c 'echo $$ > \(left.path); exec sleep 60' & read pid < \(left.path); echo $pid >&2; echo hi"
        let started = Date()
        let end = try #require(await runCommands([.shell(script)], deadline: 40))
        if let outsider = pid_t(end.stderrText.trimmingCharacters(in: .whitespacesAndNewlines)) { kill(outsider, SIGKILL) }
        #expect(end.report.status == .succeeded)
        #expect(end.stdoutText == "hi\n")
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= ChildProcessGroup.drainGraceAfterExit * 0.9 && waited < 30, "ended after \(waited) s")
    }
}

/// Ends of process groups, and whether each came on the thread that created the recorder.
private final class EndRecorder: @unchecked Sendable {
    struct End {
        let outcome: ChildProcessGroup.Outcome
        let onServicingThread: Bool
    }

    private let lock = NSLock()
    private let thread = pthread_self()
    private var ends: [End] = []

    func record(_ outcome: ChildProcessGroup.Outcome) {
        let here = pthread_equal(thread, pthread_self()) != 0
        lock.withLock { ends.append(End(outcome: outcome, onServicingThread: here)) }
    }

    var count: Int { lock.withLock { ends.count } }
    var first: End? { lock.withLock { ends.first } }
}

/// Whether `fd` polls readable within `timeout` milliseconds.
private func isReadable(_ fd: Int32, timeout: Int32) -> Bool {
    var item = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&item, 1, timeout) > 0
}

extension FIFO {
    /// The first line written within `timeout` seconds, waiting on this thread (nil if none came).
    fileprivate func waitForLine(timeout: Double) -> String? {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var text = ""
        let deadline = Date().addingTimeInterval(timeout)
        while !text.contains("\n") {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var item = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&item, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = read(fd, &buffer, buffer.count)
            if count > 0 { text += String(decoding: buffer[..<count], as: UTF8.self) }
        }
        return String(text[..<text.firstIndex(of: "\n")!])
    }

    /// Writes `text` (the FIFO keeps it while the fixture holds its end open).
    fileprivate func write(_ text: String) {
        let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}
