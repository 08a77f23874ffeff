import Testing
@testable import OPQCore

/// The O(1) views behind metrics and the dashboard (`Scheduler+Telemetry.swift`).
struct TelemetryViewTests {
    @Test func workersLostCountsLostWorkersButNotGoodbyes() {
        var core = Scheduler()
        _ = core.workerJoined("gone", slots: 1, at: 0)
        _ = core.workerJoined("silent", slots: 1, at: 0)
        _ = core.workerJoined("broken", slots: 1, at: 0)
        core.workerLeft("gone", at: 1)
        #expect(core.workersLost == 0)
        core.workerLost("broken", at: 1)
        #expect(core.workersLost == 1)
        core.tick(at: 1 + core.configuration.workerTimeout)  // "silent" sent no heartbeat
        #expect(core.workersLost == 2)
    }

    @Test func progressOfAJobCountsItsOperationsWithoutListingThem() throws {
        var core = Scheduler()
        let receipt = try core.submit(Submission([
            OperationSpec(name: "first", work: .command(Command(["true"]))),
            OperationSpec(name: "second", work: .command(Command(["true"])), dependencies: [.name("first")]),
        ]), at: 0)
        let progress = try #require(core.progress(of: receipt.job))
        #expect(progress.firstOperation == receipt.operations[0] && progress.operationCount == 2 && !progress.isFinished)
        #expect(progress.counts == OperationCounts(pending: 1, ready: 1))
        #expect(core.name(of: receipt.operations[1]) == "second")
        #expect(core.progress(of: JobID(99)) == nil && core.name(of: OperationID(99)) == nil)
    }
}
