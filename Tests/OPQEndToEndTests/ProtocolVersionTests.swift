import Foundation
@_spi(Wire) import OPQClient
import OPQWire
import Testing
import ZeroMQ

/// The real `opq-coordinator` refuses a peer that speaks another protocol version, naming both versions,
/// and keeps serving everyone else.
@Suite(.serialized) struct ProtocolVersionTests {
    /// A raw DEALER on `endpoint`, played by the test.
    static func peer(_ context: Context, endpoint: String, identity: String) throws -> Socket {
        let socket = try context.socket(.dealer)
        try socket.set(.routingID, Array(identity.utf8))
        try socket.set(.linger, 0)
        try socket.connect(endpoint)
        return socket
    }

    /// The frames of the next message on `socket` within 10 seconds, nil if none came.
    static func next(_ socket: Socket) throws -> [[UInt8]]? {
        var poller = Poller()
        _ = try poller.add(socket)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            guard try poller.poll(timeout: Int(deadline.timeIntervalSinceNow * 1000) + 1) > 0 else { continue }
            if let frames = try socket.receiveMultipart(flags: .dontWait) { return frames }
        }
        return nil
    }

    @Test func aWorkerClaimingAnotherProtocolVersionIsDisconnectedWithBothVersionsNamed() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let context = try Context()
        defer { context.close() }
        let worker = try Self.peer(context, endpoint: cluster.workersEndpoint, identity: "from-the-future")
        var register = Opq_V1_WorkerMessage()
        register.register.protocolVersion = WireLimits.protocolVersion + 1
        register.register.workerName = "from-the-future"
        register.register.slots = 1
        _ = try worker.send(try Frames.encode(register))
        var reply = Opq_V1_CoordinatorToWorker()
        repeat {  // heartbeats may come first
            reply = try Frames.decode(try #require(try Self.next(worker), "no answer to the Register"), as: Opq_V1_CoordinatorToWorker.self).message
        } while reply.body == .heartbeat(Opq_V1_Heartbeat())
        guard case .disconnect(let disconnect) = reply.body else { Issue.record("expected a disconnect, got \(reply)"); return }
        #expect(disconnect.code == .unsupportedProtocol)
        #expect(disconnect.reason == "protocol version 2 is not supported (this side speaks 1)")

        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let workers = try client.request { $0.listWorkers = Opq_V1_ListWorkers() }.reply
        #expect(workers.workers.workers.isEmpty, "the refused worker was not counted in: \(workers)")
    }

    @Test func aClientSpeakingAnotherProtocolVersionGetsAnErrorNamingBothVersions() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let context = try Context()
        defer { context.close() }
        let client = try Self.peer(context, endpoint: cluster.clientsEndpoint, identity: "old-client")
        let valid = try Frames.encode(Opq_V1_ClientRequest.request(7) { $0.listQueues = Opq_V1_ListQueues() })
        _ = try client.send([Array("OPQ/2".utf8), valid[1]])
        let reply = try Frames.decode(try #require(try Self.next(client), "no answer"), as: Opq_V1_CoordinatorToClient.self).message
        guard case .reply(let answer) = reply.body, case .error(let error) = answer.result else {
            Issue.record("expected an error reply, got \(reply)")
            return
        }
        #expect(error.code == .unsupportedProtocol)
        #expect(error.message.hasPrefix("opq protocol version 2 is not supported (this side speaks 1)"), "\(error.message)")
    }
}
