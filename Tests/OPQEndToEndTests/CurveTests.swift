import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// CURVE with roles over loopback TCP, with the real executables: a job runs; an unauthenticated peer,
/// a wrong server key, a wrong-role key and a revoked key are each refused.
@Suite(.serialized, .enabled(if: CurveKeyPair.isSupported, "libzmq without CURVE"))
struct CurveTests {
    /// A coordinator with CURVE on two loopback TCP ports, and its keyring.
    final class CurveCluster: TestCluster, @unchecked Sendable {
        let keyring: CurveKeyring

        init() throws {
            let keys = FileManager.default.temporaryDirectory.appendingPathComponent("opq-curve-keys-\(UUID().uuidString.prefix(8))")
            keyring = try CurveKeyring(in: keys.path)
            try super.init(tcp: true)
        }

        func startCoordinator() throws {
            try super.startCoordinator(["--heartbeat", "0.5"] + keyring.coordinatorArguments)
        }

        /// Starts a worker named `name` with the secret key file `secretFile`.
        @discardableResult
        func startWorker(_ name: String, secretFile: String, serverKey: String? = nil, slots: Int = 1) throws -> ChildProcess {
            try super.startWorker(name, slots: slots, arguments: ["--heartbeat", "0.5", "--curve-key", secretFile,
                                                                  "--server-key", serverKey ?? keyring.coordinatorPublic])
        }

        /// A client connection with `keys` (default: the coordinator's real public key).
        func client(_ keys: CurveKeyPair?, serverKey: String? = nil) throws -> CoordinatorConnection {
            let security: ConnectionSecurity = keys.map { .curve(serverKey: serverKey ?? keyring.coordinator.publicKey, clientKeys: $0) } ?? .none
            return try CoordinatorConnection(endpoint: clientsEndpoint, security: security)
        }

        override func stop() {
            super.stop()
            try? FileManager.default.removeItem(atPath: keyring.directory)
        }
    }

    @Test func aJobWithDependenciesRunsOverCurveAndStrangersAndWrongRolesAreRefused() throws {
        let cluster = try CurveCluster()
        defer { cluster.stop() }
        // Keys first: the coordinator reads the authorized directories when it starts.
        let workerKey = try cluster.keyring.make("w1", authorizedAs: .worker)
        let clientKey = try cluster.keyring.make("alice", authorizedAs: .client)
        try cluster.startCoordinator()
        try cluster.startWorker("w1", secretFile: workerKey.secretFile)
        let client = try cluster.client(clientKey.keys)
        let log = cluster.path("ran")
        let receipt = try client.submit(Submission([
            OperationSpec(name: "a", work: Evidence.append("a", to: log)),
            OperationSpec(name: "b", work: Evidence.append("b", to: log), dependencies: [.name("a")]),
        ]), timeout: 30)
        let job = try client.wait(job: JobID(receipt.job), timeout: 60)
        #expect(!job.timedOut && job.job.counts.succeeded == 2, "\(cluster.logs)")
        #expect(Evidence.lines(log) == ["a", "b"])

        // No CURVE at all, an unknown key, a worker's key on the clients socket, the wrong server key.
        let plain = try cluster.client(nil)
        #expect(throws: ClientError.self) { try plain.request(timeout: 2) { $0.listQueues = Opq_V1_ListQueues() } }
        // The socket monitor tells why: the authenticator's status, or a handshake that broke off.
        for (what, stranger, why, advice) in [
            ("unknown key", try cluster.client(CurveKeyPair.generate()), KeyRefusal.refused(status: 400), "--authorized-clients"),
            ("worker key", try cluster.client(workerKey.keys), .refused(status: 400), "--authorized-clients"),
            ("wrong server key", try cluster.client(clientKey.keys, serverKey: CurveKeyPair.generate().publicKey), .handshakeFailed, "--server-key"),
        ] {
            let error = #expect(throws: ClientError.self, "\(what)") {
                try stranger.submit(Submission([OperationSpec(name: "x", work: Evidence.append("x", to: log))]), timeout: 2)
            }
            guard case let .keyNotAccepted(_, _, reason) = error else { Issue.record("\(what): \(String(describing: error))"); continue }
            #expect(reason == why, "\(what)")
            #expect(error!.description.contains("the coordinator did not accept this key") && error!.description.contains(advice), "\(error!)")
        }
        #expect(cluster.coordinator!.output.contains("key not authorized for clients"), "\(cluster.logs)")

        // A client's key on the workers socket never registers; the worker says why.
        let misused = try cluster.startWorker("misused", secretFile: clientKey.secretFile)
        #expect(misused.waitForOutput("the coordinator did not accept this key (ZAP status 400)", within: 20), "\(misused.output)")
        #expect(misused.output.contains("--authorized-workers"), "\(misused.output)")
        #expect(cluster.coordinator!.output.contains("key not authorized for workers"))
        let workers = try client.request { $0.listWorkers = Opq_V1_ListWorkers() }.reply.workers.workers
        #expect(workers.map(\.name) == ["w1"], "\(workers)")
        #expect(Evidence.lines(log) == ["a", "b"], "nothing a stranger sent ran")
    }

    /// Every request on a connection whose key the coordinator refused ends within its timeout with
    /// "the coordinator did not accept this key". libzmq drops a refused CURVE connection for good, so
    /// from the second request on the DEALER has no connection to queue on and a blocking send never
    /// returned (the hang this suite used to show).
    @Test func everyRequestOnARefusedConnectionEndsWithinItsTimeout() throws {
        let cluster = try CurveCluster()
        defer { cluster.stop() }
        let clientKey = try cluster.keyring.make("alice", authorizedAs: .client)
        try cluster.startCoordinator()
        try cluster.client(clientKey.keys).request(timeout: 30) { $0.listQueues = Opq_V1_ListQueues() }
        let (endpoint, serverKey) = (cluster.clientsEndpoint, cluster.keyring.coordinator.publicKey)
        let stranger = try CurveKeyPair.generate()
        let outcomes = resultOnThread(within: 60) { () -> [String] in
            do {
                let connection = try CoordinatorConnection(endpoint: endpoint, security: .curve(serverKey: serverKey, clientKeys: stranger))
                return (0..<3).map { _ in
                    do throws(ClientError) {
                        try connection.request(timeout: 2) { $0.listQueues = Opq_V1_ListQueues() }
                        return "answered"
                    } catch {
                        if case .keyNotAccepted = error { return "not accepted" }
                        return "\(error)"
                    }
                }
            } catch {
                return ["\(error)"]
            }
        }
        let outcome = try #require(outcomes, "a request on the refused connection never returned\n\(cluster.logs)")
        #expect(outcome == ["not accepted", "not accepted", "not accepted"])
        #expect(cluster.coordinator!.output.contains("key not authorized for clients"), "\(cluster.logs)")
    }

    /// Over CURVE, no coordinator at the endpoint is "no answer", not a refused key: only a handshake
    /// that failed (seen on the socket's monitor) makes it "the coordinator did not accept this key",
    /// for a client and for a worker.
    @Test func noCoordinatorIsNoAnswerNotARefusedKey() throws {
        let endpoint = "tcp://127.0.0.1:\(try freeLoopbackPort())"
        let keys = try CurveKeyPair.generate()
        let connection = try CoordinatorConnection(endpoint: endpoint, security: .curve(serverKey: CurveKeyPair.generate().publicKey, clientKeys: keys))
        let error = #expect(throws: ClientError.self) { try connection.request(timeout: 1) { $0.listQueues = Opq_V1_ListQueues() } }
        guard case .timeout = error else { Issue.record("\(String(describing: error))"); return }
        #expect(error!.description.contains("is opq-coordinator running?"), "\(error!)")

        // A worker likewise; and one with a wrong server key is told to check it.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-curve-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyring = try CurveKeyring(in: directory.appendingPathComponent("keys").path)
        let workerKey = try keyring.make("w", authorizedAs: .worker)
        let alone = try ChildProcess("opq-worker", ["--coordinator", endpoint, "--name", "alone", "--slots", "1", "--heartbeat", "0.5", "--log-level", "debug"]
                                     + keyring.workerArguments(workerKey.secretFile), name: "alone", logDirectory: directory)
        defer { alone.stop() }
        #expect(alone.waitForOutput("no connection to the coordinator", within: 20), "\(alone.output)")
        #expect(!alone.output.contains("did not accept"), "\(alone.output)")

        let cluster = try CurveCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let lost = try cluster.startWorker("lost", secretFile: workerKey.secretFile, serverKey: keyring.coordinatorPublic)
        #expect(lost.waitForOutput("the CURVE handshake failed. Check that --server-key", within: 20), "\(lost.output)")
    }

    @Test func aKeyRegistersOneName() throws {
        let cluster = try CurveCluster()
        defer { cluster.stop() }
        let key = try cluster.keyring.make("shared", authorizedAs: .worker)
        let clientKey = try cluster.keyring.make("alice", authorizedAs: .client)
        try cluster.startCoordinator()
        try cluster.startWorker("first", secretFile: key.secretFile)
        let client = try cluster.client(clientKey.keys)
        let receipt = try client.submit(Submission([OperationSpec(name: "a", work: .command(Command(["true"])))]), timeout: 30)
        #expect(try client.wait(job: JobID(receipt.job), timeout: 60).job.counts.succeeded == 1)

        let second = try cluster.startWorker("second", secretFile: key.secretFile)
        let status = try #require(second.waitForExit(within: 60), "the second name kept retrying\n\(second.output)")
        #expect((status >> 8) & 0xff != 0)
        #expect(second.output.contains("a key registers one name"), "\(second.output)")
        #expect(cluster.workers["first"]!.isRunning)
    }

    @Test func aRevokedWorkerIsDisconnectedAndItsOperationRunsOnAnotherWorker() throws {
        let cluster = try CurveCluster()
        defer { cluster.stop() }
        let k1 = try cluster.keyring.make("w1", authorizedAs: .worker)
        let k2 = try cluster.keyring.make("w2", authorizedAs: .worker)
        let clientKey = try cluster.keyring.make("alice", authorizedAs: .client)
        try cluster.startCoordinator()
        let w1 = try cluster.startWorker("w1", secretFile: k1.secretFile)
        let client = try cluster.client(clientKey.keys)
        let fifo = try WorkerTrustTests.HeldFifo(cluster.path("started"))
        let gate = cluster.path("gate")
        let runs = cluster.path("runs")
        let work = Work.command(Command(["/bin/sh", "-c",
            "echo \"$PPID\" > \"$0\"; while [ ! -e \"$1\" ]; do sleep 0.05; done; echo \"$PPID\" >> \"$2\"", fifo.path, gate, runs]))
        let receipt = try client.submit(Submission([OperationSpec(name: "long", work: work)]), timeout: 30)
        try #require(fifo.lines(1, within: 30) == ["\(w1.pid)"], "it did not start on w1\n\(cluster.logs)")

        let w2 = try cluster.startWorker("w2", secretFile: k2.secretFile)
        try FileManager.default.removeItem(atPath: cluster.keyring.authorizedFile("w1", .worker))
        cluster.coordinator!.signal(SIGHUP)
        let rerun = fifo.lines(1, within: 30)
        #expect(rerun == ["\(w2.pid)"], "the operation was requeued to w2\n\(cluster.logs)")
        FileManager.default.createFile(atPath: gate, contents: nil)
        let job = try client.wait(job: JobID(receipt.job), timeout: 60)
        #expect(!job.timedOut && job.job.counts.succeeded == 1)
        #expect(Evidence.lines(runs) == ["\(w2.pid)"], "w1's copy was stopped (its lease ended), never finished")
        let info = try client.operation(OperationID(receipt.operations[0])).info
        #expect(info.attempt == 2, "the run on w2 is its second attempt: \(info.attempt)")
        #expect(cluster.coordinator!.output.contains("worker key revoked"))
        #expect(w1.waitForOutput("the coordinator did not accept this key", within: 20), "\(w1.output)")
        let workers = try client.request { $0.listWorkers = Opq_V1_ListWorkers() }.reply.workers.workers
        #expect(workers.map(\.name) == ["w2"])
    }
}
