import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// A client that does not read, against the real `opq-coordinator` over real sockets (issue 11: replies
/// were dropped once ~1,000 were unread, although their requests had been applied).
@Suite(.serialized) struct ClientLoadTests {
    /// A client that sends requests and never reads (a raw DEALER: libzmq's default queues) fills its
    /// pipe; the coordinator keeps the replies of everything it applied and refuses the rest before
    /// applying it. When the client finally reads, every applied submission has its receipt (the
    /// coordinator knows no job the client was not told about); a refusal must say "request not applied".
    @Test func aClientThatDoesNotReadGetsTheReplyOfEveryRequestThatWasApplied() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(["--log-level", "warning"])
        let context = try Context()
        defer { context.close() }
        let dealer = try context.socket(.dealer)
        defer { dealer.close() }
        try dealer.set(.linger, 0)
        try dealer.connect(cluster.clientsEndpoint)
        // The coordinator's outbox limit (CoordinatorConfiguration.clientBacklogMessages, 10,000) plus what
        // what both libzmq pipes and the kernel hold (here 4,000 and more small replies), plus many past the limit.
        let total = 40_000
        for k in 1...total {
            // An empty operation, so each accepted submission finishes at once and leaves a job behind.
            let frames = try Frames.encode(Opq_V1_ClientRequest.request(UInt64(k)) {
                $0.submit = Opq_V1_Submit(Submission([OperationSpec(name: "unread-\(k)")]), idempotencyKey: "")
            })
            guard try dealer.send(frames) == .sent else {
                Issue.record("the coordinator stopped taking requests after \(k - 1)")
                return
            }
        }
        // Everything sent was handled once another client's request sent afterwards is answered.
        let other = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        _ = try other.request(timeout: 120) { $0.listQueues = Opq_V1_ListQueues() }

        var accepted: Set<UInt64> = []
        var refused = 0
        var poller = Poller()
        _ = try poller.add(dealer)
        let deadline = Date().addingTimeInterval(120)
        var last = Date()
        // Read until nothing more comes for 2 s (the coordinator retries kept replies every 10 ms).
        while Date() < deadline, Date().timeIntervalSince(last) < 2 {
            guard try poller.poll(timeout: 100) > 0 else { continue }
            while let frames = try dealer.receiveMultipart(flags: .dontWait) {
                last = Date()
                let message = try Frames.decode(frames, as: Opq_V1_CoordinatorToClient.self).message
                guard case .reply(let reply)? = message.body else { continue }
                switch reply.result {
                case .submitted(let receipt)?:
                    accepted.insert(receipt.job)
                case .error(let error)?:
                    #expect(error.message.contains("request not applied"), "\(error)")
                    refused += 1
                default:
                    Issue.record("unexpected reply \(reply)")
                }
            }
        }
        print("unread client: \(accepted.count) submissions accepted, \(refused) refused, \(total - accepted.count - refused) refusals dropped")
        // Backpressure: once its outbox was full, the client's requests were not applied. (Measured
        // 2026-11-24: 16,384 applied.) The client is told: its first refusals arrive (issue 11: none did,
        // the turn that filled the outbox had already used the refusal allowance).
        #expect(accepted.count >= 10_000 && accepted.count < total, "the coordinator applied \(accepted.count) of \(total)")
        #expect(refused > 0, "the flooding client was never told that its requests were not applied")
        // Every job the coordinator has was acknowledged to the client: no reply to an applied request was lost.
        var known: Set<UInt64> = []
        var page = Opq_V1_JobList()
        repeat {
            let after = known.max() ?? 0
            page = try other.request(timeout: 60) { $0.listJobs = .with { $0.after = after } }.reply.jobs
            known.formUnion(page.jobs.map(\.id))
        } while page.more && !page.jobs.isEmpty
        #expect(known == accepted, "\(known.subtracting(accepted).count) jobs applied without a reply to the client")
    }
}
