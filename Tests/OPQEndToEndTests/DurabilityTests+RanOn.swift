import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing

extension DurabilityTests {
    /// The worker and times of a finish report kept in the journal (one with output) survive a restart;
    /// a silent success is not journaled for them.
    @Test func theWorkerThatRanAnOperationAndWhenSurviveARestart() throws {
        let (cluster, connection) = try Self.start()
        var client = connection
        defer { cluster.stop() }
        let receipt = try client.submit(Submission([
            OperationSpec(name: "talks", work: .command(Command(["/bin/echo", "hello"]))),
            OperationSpec(name: "silent", work: .command(Command(["/bin/true"]))),
        ]))
        let job = try client.finish(receipt.job, within: 60, cluster: cluster)
        #expect(job.counts.succeeded == 2, "\(job.counts)\n\(cluster.logs)")
        let talks = OperationID(receipt.operations[0]), silent = OperationID(receipt.operations[1])
        let before = try client.operation(talks).info
        #expect(before.finishedBy == "w1" && before.hasEndedAt && before.hasStartedAt, "\(before)")
        #expect(before.startedAt <= before.endedAt)
        #expect(try client.operation(silent).info.finishedBy == "w1")

        client = try Self.restart(cluster)
        let after = try client.operation(talks).info
        #expect(after.finishedBy == "w1", "\(after)")
        #expect(after.endedAt == before.endedAt && after.startedAt == before.startedAt)
        let quiet = try client.operation(silent).info
        #expect(quiet.finishedBy.isEmpty && !quiet.hasEndedAt, "a plain success's report is not journaled: \(quiet)")
    }
}
