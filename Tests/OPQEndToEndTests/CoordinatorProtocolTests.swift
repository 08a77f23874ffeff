import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// The real `opq-coordinator` over real ZeroMQ (`ipc://` in a fresh directory), driven by a client
/// connection and, where a test needs one, a worker played by the test itself.
@Suite(.serialized) struct CoordinatorProtocolTests {
    /// A worker played by the test: a DEALER that speaks the worker protocol.
    final class FakeWorker {
        let socket: Socket
        init(_ context: Context, name: String, endpoint: String, slots: Int32) throws {
            socket = try context.socket(.dealer)
            try socket.set(.routingID, Array(name.utf8))
            try socket.set(.linger, 0)
            try socket.connect(endpoint)
            var register = Opq_V1_WorkerMessage()
            register.register.protocolVersion = WireLimits.protocolVersion
            register.register.workerName = name
            register.register.slots = slots
            try send(register)
        }

        func send(_ message: Opq_V1_WorkerMessage, raw: [[UInt8]] = []) throws {
            _ = try socket.send(try Frames.encode(message, raw: raw))
        }

        /// The next message other than a heartbeat, within `seconds`.
        func next(within seconds: Double = 10) throws -> Opq_V1_CoordinatorToWorker? {
            var poller = Poller()
            _ = try poller.add(socket)
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                guard try poller.poll(timeout: Int(deadline.timeIntervalSinceNow * 1000) + 1) > 0,
                      let frames = try socket.receiveMultipart(flags: .dontWait) else { continue }
                let message = try Frames.decode(frames, as: Opq_V1_CoordinatorToWorker.self).message
                if case .heartbeat = message.body { continue }
                return message
            }
            return nil
        }
    }

    static func command(_ name: String, after: [String] = [], priority: QueuePriority = .normal) -> OperationSpec {
        OperationSpec(name: name, work: .command(Command(["true"])), dependencies: after.map { .name($0) }, priority: priority)
    }

    @Test func aSubmissionIsAcknowledgedWithIdsAndARefusedOneChangesNothing() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)

        let refused = Result { try client.submit(Submission([Self.command("a", after: ["b"]), Self.command("b", after: ["a"])])) }
        guard case .failure(let failure) = refused, case .refused(let error)? = failure as? ClientError else {
            Issue.record("a cycle was not refused: \(refused)")
            return
        }
        #expect(error.code == .cycle && error.cycleNames == ["a", "b"])
        #expect(error.message == "dependency cycle: 'a' → 'b' → 'a'")
        let receipt = try client.submit(Submission([Self.command("x"), Self.command("y", after: ["x"])]))
        #expect(receipt.job == 1 && receipt.operations == [1, 2], "the refused submission took no ids")
        let info = try client.operation(OperationID(2)).info
        #expect(info.name == "y" && info.state == .pending && info.dependencies == [1])
    }

    @Test func garbageFromAClientGetsAnErrorAndEveryoneElseIsStillServed() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let context = try Context()
        defer { context.close() }
        let rogue = try context.socket(.dealer)
        try rogue.set(.linger, 0)
        try rogue.connect(cluster.clientsEndpoint)
        let valid = try Frames.encode(Opq_V1_ClientRequest.request(7) { $0.listQueues = Opq_V1_ListQueues() })
        let garbage: [[[UInt8]]] = [
            [Array("hello".utf8)],
            [Array("OPQ/9".utf8), valid[1]],
            [valid[0], Array(valid[1].prefix(valid[1].count / 2)) + [0xFF, 0xFF, 0xFF]],
            [valid[0], [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]],
            [valid[0]],
        ]
        var poller = Poller()
        _ = try poller.add(rogue)
        for frames in garbage {
            _ = try rogue.send(frames)
            #expect(try poller.poll(timeout: 10_000) == 1)
            let reply = try Frames.decode(try #require(try rogue.receiveMultipart()), as: Opq_V1_CoordinatorToClient.self).message
            guard case .reply(let answer) = reply.body, case .error(let error) = answer.result else {
                Issue.record("expected an error reply, got \(reply)")
                continue
            }
            #expect([.malformedMessage, .unsupportedProtocol].contains(error.code), "\(error.message)")
        }
        // A 100 MB message is over MAXMSGSIZE: that peer is dropped, the coordinator keeps serving.
        let huge = try context.socket(.dealer)
        try huge.set(.linger, 0)
        try huge.connect(cluster.clientsEndpoint)
        _ = try huge.send([Frames.signature, [UInt8](repeating: 0x41, count: 100 << 20)])
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let receipt = try client.submit(Submission([Self.command("still here")]))
        #expect(receipt.operations == [1])
        #expect(cluster.coordinator!.isRunning)
    }

    @Test func aWorkerGetsWorkOnlyForFreeSlotsInPriorityOrderAndItsReportsFinishTheJob() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        try client.request { $0.setQueue = Opq_V1_QueueSettings(queue: "default", QueueSettings(isSuspended: true)) }
        let receipt = try client.submit(Submission([
            Self.command("low", priority: .low), Self.command("high", priority: .high), Self.command("normal"),
        ]))
        let context = try Context()
        defer { context.close() }
        let worker = try FakeWorker(context, name: "fake-1", endpoint: cluster.workersEndpoint, slots: 1)
        guard case .welcome = try #require(try worker.next()).body else { Issue.record("no welcome"); return }
        try client.request { $0.setQueue = Opq_V1_QueueSettings(queue: "default", QueueSettings(isSuspended: false)) }

        var order: [String] = []
        for _ in 0..<3 {
            let message = try #require(try worker.next(), "a dispatch for the free slot")
            guard case .orders(let orders) = message.body, orders.items.count == 1, case .dispatch(let dispatch) = orders.items[0].kind else {
                Issue.record("expected one dispatch, got \(message)")
                return
            }
            order.append(dispatch.name)
            try worker.send(.reports([.started(OperationID(dispatch.operation), attempt: Int(dispatch.attempt))]))
            var finished = Opq_V1_Finished(OperationID(dispatch.operation), attempt: Int(dispatch.attempt), report: .succeeded, duration: 0.01)
            var raw: [[UInt8]] = []
            finished.stdout = Opq_V1_OutputTail.attach(Array("out of \(dispatch.name)".utf8), to: &raw)
            try worker.send(.reports([.finished(finished)]), raw: raw)
        }
        #expect(order == ["high", "normal", "low"])
        let waited = try client.wait(job: JobID(receipt.job), timeout: 10)
        #expect(!waited.timedOut && waited.job.finished && waited.job.counts.succeeded == 3)
        let (info, raw) = try client.operation(OperationID(receipt.operations[0]), includeOutput: true)
        #expect(info.outcome == .succeeded && info.stdout.bytes(in: raw) == Array("out of low".utf8))
    }

    @Test func garbageFromAWorkerGetsADisconnect() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let context = try Context()
        defer { context.close() }
        let worker = try FakeWorker(context, name: "fake-2", endpoint: cluster.workersEndpoint, slots: 1)
        guard case .welcome = try #require(try worker.next()).body else { Issue.record("no welcome"); return }
        _ = try worker.socket.send([Frames.signature, [0x12, 0x34, 0x56]])
        let message = try #require(try worker.next())
        guard case .disconnect(let disconnect) = message.body else { Issue.record("expected a disconnect, got \(message)"); return }
        #expect(disconnect.code == .malformedMessage)
    }

    @Test func aWatcherNeverMissesAFinishEvenOneBeforeItConnected() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let done = try client.submit(Submission([OperationSpec(name: "join")]))  // empty: finishes at once
        let watcher = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let reply = try watcher.request { $0.watch.job = done.job }.reply
        #expect(!reply.watching.resumed)
        let snapshot = try #require(try watcher.nextStreamMessage(timeout: 10))
        guard case .snapshot(let state) = snapshot.body else { Issue.record("expected a snapshot, got \(snapshot)"); return }
        #expect(state.jobs.first?.finished == true && state.operations.first?.outcome == .succeeded)

        // A stream opened before a job: its events arrive after the snapshot, numbered in order, each
        // Events message naming the previous one, ending with the job's finish.
        let stream = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        try stream.request { $0.watch.all = Opq_V1_All() }
        let live = try client.submit(Submission([OperationSpec(name: "a"), OperationSpec(name: "b", dependencies: [.name("a")])]))
        var sequences: [UInt64] = []
        var previous: UInt64?
        var states: [String] = []
        while !states.contains("job \(live.job)"), let message = try stream.nextStreamMessage(timeout: 10) {
            switch message.body {
            case .snapshot(let snapshot): previous = snapshot.sequence
            case .events(let events):
                #expect(events.previous == previous, "no gap in the stream")
                previous = events.items.last?.sequence
                sequences += events.items.map(\.sequence)
                for item in events.items {
                    if case .operation(let change) = item.kind { states.append("\(change.operation) \(change.state)") }
                    if case .jobFinished(let job) = item.kind { states.append("job \(job)") }
                }
            default: break
            }
        }
        #expect(sequences == sequences.sorted())
        #expect(states == ["2 ready", "3 pending", "2 finished", "3 ready", "3 finished", "job 2"])
    }
}
