import Foundation
import OPQClient
import OPQCore
import Testing

/// A watch with an event delay (`CoordinatorClient.watch(_:includeOutput:eventDelay:)`, as `opq map`
/// asks): a real coordinator and worker over ZeroMQ send a busy job's events in few messages, and the
/// client still gets every one of them, in order, without a gap.
@Suite(.serialized) struct EventDelayTests {
    @Test func aDelayedWatchGetsEveryEventInOrderInFewerMessages() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1", slots: 2)
        let client = try CoordinatorClient(endpoint: cluster.clientsEndpoint)
        let count = 300
        let receipt = try client.submit(Submission((0..<count).map { OperationSpec(name: "n\($0)", work: .command(Command(["/bin/true"]))) }))
        try client.watch(.job(receipt.job), eventDelay: 0.05)
        let seen = try Self.follow(client, job: receipt.job)
        #expect(seen.jobFinished, "\(cluster.logs)")
        #expect(seen.snapshots == 1, "no gap made the client start the watch again")
        let sequences = seen.sequences, finished = seen.finished
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "in order, none twice")
        // Every operation's finish came once, as an event or (done before the watch) in the snapshot.
        #expect(finished.count == Set(finished).count)
        #expect(Set(finished).union(seen.finishedBefore) == Set(receipt.operations) && Set(finished).isDisjoint(with: seen.finishedBefore))
        // One message per 50 ms while the job runs, not one or two per command (three events each).
        #expect(sequences.count >= count, "most of the job ran after the watch started")
        #expect(seen.messages * 2 < sequences.count, "\(seen.messages) messages for \(sequences.count) events")
    }

    /// What `opq run` and `opq map` do: the watch starts where the submission left the stream (the
    /// receipt's position), with no snapshot — and still misses nothing the job did between the receipt and
    /// the watch (the worker starts commands at once).
    @Test func aWatchFromTheReceiptGetsNoSnapshotAndEveryStartAndFinish() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1", slots: 2)
        let client = try CoordinatorClient(endpoint: cluster.clientsEndpoint)
        let count = 200
        let receipt = try client.submit(Submission((0..<count).map { OperationSpec(name: "n\($0)", work: .command(Command(["/bin/true"]))) }))
        let position = try #require(receipt.streamPosition)
        #expect(try client.watch(.job(receipt.job), eventDelay: 0.02, after: position), "resumed at the receipt")
        let seen = try Self.follow(client, job: receipt.job)
        #expect(seen.jobFinished, "\(cluster.logs)")
        #expect(seen.snapshots == 0)
        #expect(seen.sequences.first.map { $0 > position.sequence } == true && seen.sequences == seen.sequences.sorted())
        #expect(seen.started.count == count && Set(seen.started) == Set(receipt.operations), "every start, once")
        #expect(seen.finished.count == count && Set(seen.finished) == Set(receipt.operations), "every finish, once")
    }

    /// What a watch brought until `job` finished (or two minutes passed).
    struct Seen {
        var snapshots = 0, messages = 0
        var sequences: [UInt64] = []
        var started: [OperationID] = [], finished: [OperationID] = []
        /// Finished before the watch started (listed finished in a snapshot).
        var finishedBefore = Set<OperationID>()
        var jobFinished = false
    }

    /// Follows the watch `client` started until `job` finishes.
    static func follow(_ client: CoordinatorClient, job: JobID) throws -> Seen {
        var seen = Seen()
        let end = ContinuousClock.now + .seconds(120)
        while !seen.jobFinished, ContinuousClock.now < end {
            switch try client.nextWatchUpdate(until: end) {
            case .snapshot(let snapshot):
                seen.snapshots += 1
                for info in snapshot.operations where info.state == .finished { seen.finishedBefore.insert(info.id) }
                seen.jobFinished = snapshot.finishedJobs.contains(job)
            case .events(let events):
                seen.messages += 1
                for event in events {
                    switch event {
                    case .stateChanged(let change):
                        seen.sequences.append(change.sequence)
                        if change.state == .executing { seen.started.append(change.operation) }
                        if change.state == .finished { seen.finished.append(change.operation) }
                    case .jobFinished(let finished): seen.jobFinished = seen.jobFinished || finished == job
                    case .progress: break
                    }
                }
            default:
                break
            }
        }
        return seen
    }
}
