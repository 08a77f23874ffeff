import Foundation
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// Many events for many watches in one loop turn (issue 11: with prunes in the fuzz stream the
/// coordinator stopped answering anyone for 16–61 s). Routing an event to the watchers copied every
/// watcher's pending events, so a turn with E events for W watches cost O(W·E²).
@Suite(.serialized) struct WatcherLoadTests {
    /// A client with ten watches of everything; a submission of 10,000 empty operations makes about
    /// 30,000 events in one turn (each operation becomes ready and finishes at once). Every watch gets the
    /// job's end, and another client is answered, within the deadline.
    @Test func aTurnWithThousandsOfEventsForManyWatchesStaysLinear() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(["--log-level", "warning"])
        let context = try Context()
        defer { context.close() }
        let watcher = try PruneTests.RawClient(context, endpoint: cluster.clientsEndpoint)
        let watches = 10
        for watch in 1...watches {
            try watcher.send(UInt64(watch)) { $0.watch = .with { $0.all = Opq_V1_All() } }
            #expect(try watcher.reply(to: UInt64(watch), within: 30) != nil, "watch \(watch) was not acknowledged")
        }
        let submitter = try PruneTests.RawClient(context, endpoint: cluster.clientsEndpoint)
        let operations = (1...10_000).map { OperationSpec(name: "e\($0)") }
        try submitter.send(100) { $0.submit = Opq_V1_Submit(Submission(operations), idempotencyKey: "") }
        let receipt = try #require(try submitter.reply(to: 100, within: 60), "the submission was not answered")
        guard case .submitted(let submitted)? = receipt.result else {
            Issue.record("the submission was refused: \(receipt)")
            return
        }
        try submitter.send(101) { $0.listQueues = Opq_V1_ListQueues() }
        #expect(try submitter.reply(to: 101, within: 30) != nil, "the coordinator stopped answering")

        // Every watch sees the job finish.
        var finished: Set<UInt64> = []
        var poller = Poller()
        _ = try poller.add(watcher.socket)
        let deadline = Date().addingTimeInterval(60)
        while finished.count < watches, Date() < deadline {
            guard try poller.poll(timeout: 100) > 0 else { continue }
            while let frames = try watcher.socket.receiveMultipart(flags: .dontWait) {
                let message = try Frames.decode(frames, as: Opq_V1_CoordinatorToClient.self).message
                guard case .events(let events)? = message.body else { continue }
                if events.items.contains(where: { $0.jobFinished == submitted.job }) { finished.insert(events.watch) }
            }
        }
        #expect(finished.count == watches, "\(finished.count) of \(watches) watches saw job \(submitted.job) finish")
    }
}
