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
        var snapshots = 0, messages = 0
        var sequences: [UInt64] = []
        var finished: [OperationID] = []
        var seenBefore = Set<OperationID>()
        var jobFinished = false
        let end = ContinuousClock.now + .seconds(120)
        while !jobFinished, ContinuousClock.now < end {
            switch try client.nextWatchUpdate(until: end) {
            case .snapshot(let snapshot):
                snapshots += 1
                for info in snapshot.operations where info.state == .finished { seenBefore.insert(info.id) }
                jobFinished = snapshot.finishedJobs.contains(receipt.job)
            case .events(let events):
                messages += 1
                for event in events {
                    switch event {
                    case .stateChanged(let change):
                        sequences.append(change.sequence)
                        if change.state == .finished { finished.append(change.operation) }
                    case .jobFinished(let job): jobFinished = jobFinished || job == receipt.job
                    case .progress: break
                    }
                }
            default:
                break
            }
        }
        #expect(jobFinished, "\(cluster.logs)")
        #expect(snapshots == 1, "no gap made the client start the watch again")
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "in order, none twice")
        // Every operation's finish came once, as an event or (done before the watch) in the snapshot.
        #expect(finished.count == Set(finished).count)
        #expect(Set(finished).union(seenBefore) == Set(receipt.operations) && Set(finished).isDisjoint(with: seenBefore))
        // One message per 50 ms while the job runs, not one or two per command (three events each).
        #expect(sequences.count >= count, "most of the job ran after the watch started")
        #expect(messages * 2 < sequences.count, "\(messages) messages for \(sequences.count) events")
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
        var snapshots = 0
        var started: [OperationID] = [], finished: [OperationID] = []
        var sequences: [UInt64] = []
        var jobFinished = false
        let end = ContinuousClock.now + .seconds(120)
        while !jobFinished, ContinuousClock.now < end {
            switch try client.nextWatchUpdate(until: end) {
            case .snapshot: snapshots += 1
            case .events(let events):
                for event in events {
                    switch event {
                    case .stateChanged(let change):
                        sequences.append(change.sequence)
                        if change.state == .executing { started.append(change.operation) }
                        if change.state == .finished { finished.append(change.operation) }
                    case .jobFinished(let job): jobFinished = jobFinished || job == receipt.job
                    case .progress: break
                    }
                }
            default:
                break
            }
        }
        #expect(jobFinished, "\(cluster.logs)")
        #expect(snapshots == 0)
        #expect(sequences.first.map { $0 > position.sequence } == true && sequences == sequences.sorted())
        #expect(started.count == count && Set(started) == Set(receipt.operations), "every start, once")
        #expect(finished.count == count && Set(finished) == Set(receipt.operations), "every finish, once")
    }
}
