import Foundation
import OPQCore
import Testing
@testable import OPQWorker

/// The worker's one child-monitor thread drains and reaps every command; output that waits for the
/// output window (flow control) must stop only its own command's pipes (``ChildMonitor``).
@Suite("ChildMonitor: one thread for every command")
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
}
