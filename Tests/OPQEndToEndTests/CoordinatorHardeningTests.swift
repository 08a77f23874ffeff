import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// Hostile or unlucky input to the real `opq-coordinator` over real ZeroMQ (issue 11): after each hostile
/// message the coordinator is alive and still answers a normal request.
@Suite(.serialized) struct CoordinatorHardeningTests {
    typealias FakeWorker = CoordinatorProtocolTests.FakeWorker

    /// Ids at the integer limits: ≥ 2^63 used to become a negative index in the core.
    static let extremeIDs: [UInt64] = [UInt64(Int64.max), 1 << 63, (1 << 63) + 1, UInt64.max]

    /// The coordinator is alive and answers a normal request.
    static func expectServing(_ cluster: TestCluster, _ client: CoordinatorConnection, after what: String,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(cluster.coordinator?.isRunning == true, "coordinator died after \(what)\n\(cluster.logs)", sourceLocation: sourceLocation)
        let answer = Result { try client.request(timeout: 10) { $0.listQueues = Opq_V1_ListQueues() } }
        if case .failure(let error) = answer {
            Issue.record("no answer after \(what): \(error)\n\(cluster.logs)", sourceLocation: sourceLocation)
        }
    }

    /// The refusal `fill` gets, or nil (recorded as an issue) when it was answered normally.
    static func refusal(_ client: CoordinatorConnection, _ fill: (inout Opq_V1_ClientRequest) -> Void) -> Refusal? {
        do {
            let reply = try client.request(timeout: 10, fill)
            Issue.record("expected a refusal, got \(reply.reply)")
            return nil
        } catch {
            guard let refusal = error.refusal else {
                Issue.record("expected a refusal, got \(error)")
                return nil
            }
            return refusal
        }
    }

    @Test func idsAtTheIntegerLimitsAreUnknownAndTheCoordinatorKeepsServing() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        _ = try client.submit(Submission([OperationSpec(name: "a", work: .command(Command(["true"])))]))

        for id in Self.extremeIDs {
            let operationRequests: [(String, (inout Opq_V1_ClientRequest) -> Void)] = [
                ("GetOperation", { $0.getOperation.operation = id }),
                ("Cancel operation", { $0.cancel.operation = id }),
                ("SetPriority", { $0.setPriority.operation = id; $0.setPriority.priority = Int32.max }),
                ("Wait operation", { $0.wait.operation = id; $0.wait.timeoutSeconds = 1 }),
                ("AddDependency", { $0.addDependency.operation = id; $0.addDependency.dependency = 1 }),
                ("AddDependency on", { $0.addDependency.operation = 1; $0.addDependency.dependency = id }),
                ("RemoveDependency", { $0.removeDependency.operation = id; $0.removeDependency.dependency = 1 }),
                ("RemoveDependency on", { $0.removeDependency.operation = 1; $0.removeDependency.dependency = id }),
            ]
            for (name, fill) in operationRequests {
                let error = Self.refusal(client, fill)
                #expect(error?.code == .unknownOperation, "\(name) \(id)")
                #expect(error?.message == "unknown operation op-\(id)", "\(name) \(id)")
                try Self.expectServing(cluster, client, after: "\(name) \(id)")
            }
            let jobRequests: [(String, (inout Opq_V1_ClientRequest) -> Void)] = [
                ("GetJob", { $0.getJob.job = id }),
                ("Cancel job", { $0.cancel.job = id }),
                ("Wait job", { $0.wait.job = id; $0.wait.timeoutSeconds = 1 }),
                ("Watch job", { $0.watch.job = id }),
            ]
            for (name, fill) in jobRequests {
                let error = Self.refusal(client, fill)
                #expect(error?.code == .unknownJob, "\(name) \(id)")
                #expect(error?.message == "unknown job job-\(id)", "\(name) \(id)")
                try Self.expectServing(cluster, client, after: "\(name) \(id)")
            }
            let submit = Self.refusal(client) {
                var spec = Opq_V1_OperationSpec()
                spec.name = "late"
                spec.dependencies = [.with { $0.id = id }]
                $0.submit.operations = [spec]
            }
            #expect(submit?.code == .unknownDependency)
            try Self.expectServing(cluster, client, after: "Submit depending on \(id)")

            let jobs = try client.request { $0.listJobs.after = id }.reply
            #expect(jobs.jobs.jobs.isEmpty && !jobs.jobs.more)
            let operations = try client.request { $0.listOperations.after = id }.reply
            #expect(operations.operations.operations.isEmpty)
            try Self.expectServing(cluster, client, after: "ListJobs/ListOperations after \(id)")
        }

        // The same ids in a worker's reports.
        let context = try Context()
        defer { context.close() }
        let worker = try FakeWorker(context, name: "hostile", endpoint: cluster.workersEndpoint, slots: 1)
        guard case .welcome = try #require(try worker.next()).body else { Issue.record("no welcome"); return }
        for id in Self.extremeIDs {
            try worker.send(.reports([.started(OperationID(id), attempt: 1)]))
            var finished = Opq_V1_Finished(OperationID(id), attempt: 1, report: .succeeded, duration: 0)
            finished.exitCode = 0
            try worker.send(.reports([.finished(finished)]))
            try worker.send(.reports([.progress(.with { $0.operation = id; $0.attempt = 1; $0.message = "x" })]))
            try Self.expectServing(cluster, client, after: "worker reports about \(id)")
        }
    }

    @Test func twoWatchesOnOneConnectionThenADisconnectThenEvents() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        do {
            let watcher = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
            try watcher.request { $0.watch.all = Opq_V1_All() }
            try watcher.request { $0.watch.all = Opq_V1_All() }
            try watcher.request { $0.watch.queue = "default" }
        }  // the watcher's socket closes here
        for k in 0..<20 {
            _ = try client.submit(Submission([OperationSpec(name: "after-disconnect-\(k)")]))
            try Self.expectServing(cluster, client, after: "event \(k) after the watcher left")
        }
    }

    @Test(arguments: [
        ("opq-coordinator", ["--kill-grace", "1e300"], "--kill-grace must be a number of seconds from 0 to 3200000000, not 1e+300"),
        ("opq-coordinator", ["--heartbeat", "inf"], "--heartbeat must be a number of seconds greater than 0"),
        ("opq-coordinator", ["--heartbeat", "nan"], "--heartbeat must be a number of seconds greater than 0"),
        ("opq-coordinator", ["--liveness", "5000000000"], "--liveness must be a whole number from 1 to 1000, not 5000000000"),
        ("opq-coordinator", ["--recovery-grace=-1"], "--recovery-grace must be a number of seconds from 0"),
        ("opq-worker", ["--slots", "99999999999"], "--slots must be a whole number from 1 to 1048576, not 99999999999"),
        ("opq-worker", ["--slots", "1", "--kill-grace", "1e300"], "--kill-grace must be a number of seconds from 0"),
        ("opq-worker", ["--slots", "1", "--heartbeat", "0"], "--heartbeat must be a number of seconds greater than 0"),
        ("opq-worker", ["--slots", "1", "--coordinator", "tcp://127.0.0.1:0;10.0.0.1:7130"], "--coordinator: invalid endpoint"),
    ])
    func aNumberOutsideItsDocumentedRangeIsRefusedNamingTheFlag(_ executable: String, _ flags: [String], _ message: String) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let arguments = executable == "opq-coordinator"
            ? ["--workers-endpoint", cluster.workersEndpoint, "--clients-endpoint", cluster.clientsEndpoint, "--state", cluster.stateDirectory]
            : (flags.contains("--coordinator") ? [] : ["--coordinator", cluster.workersEndpoint])
        let process = try ChildProcess(executable, arguments + flags, name: "refused", logDirectory: cluster.directory)
        defer { process.stop() }
        let status = try #require(process.waitForExit(within: 30), "\(executable) \(flags) was accepted")
        #expect(status != 0)
        #expect(process.output.contains(message), "\(process.output)")
    }

    @Test func helpDocumentsEveryNumbersRange() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        for (executable, expected) in [
            ("opq-coordinator", ["at most 3200000000", "(1 to 1000)", "(0 to 3200000000)", "SECURITY", "--ipc"]),
            ("opq-worker", ["(1 to 1048576)", "(0 to 3200000000)", "at most 3200000000"]),
        ] {
            let process = try ChildProcess(executable, ["--help"], name: "\(executable)-help", logDirectory: cluster.directory)
            _ = try #require(process.waitForExit(within: 30))
            let help = process.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            for text in expected { #expect(help.contains(text), "\(executable) --help lacks '\(text)'") }
        }
    }

    @Test func progressIsBoundedAndOnlyTheWorkerRunningTheAttemptMayReportIt() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let watcher = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        try watcher.request { $0.watch.all = Opq_V1_All() }
        let context = try Context()
        defer { context.close() }
        let worker = try FakeWorker(context, name: "runner", endpoint: cluster.workersEndpoint, slots: 1)
        guard case .welcome = try #require(try worker.next()).body else { Issue.record("no welcome"); return }
        let bystander = try FakeWorker(context, name: "bystander", endpoint: cluster.workersEndpoint, slots: 1)
        guard case .welcome = try #require(try bystander.next()).body else { Issue.record("no welcome"); return }
        try client.request { $0.setQueue = Opq_V1_QueueSettings(queue: "default", QueueSettings(isSuspended: true)) }
        let receipt = try client.submit(Submission([OperationSpec(name: "long", work: .command(Command(["true"])))]))
        try client.request { $0.setQueue = Opq_V1_QueueSettings(queue: "default", QueueSettings(isSuspended: false)) }
        var dispatch: Opq_V1_Dispatch?
        for candidate in [worker, bystander] where dispatch == nil {
            if let message = try candidate.next(within: dispatch == nil && candidate === worker ? 10 : 0.5),
               case .orders(let orders) = message.body, case .dispatch(let order)? = orders.items.first?.kind {
                dispatch = order
                if candidate !== worker {
                    Issue.record("the dispatch went to the bystander; the test expects the first worker to get it")
                }
            }
        }
        let order = try #require(dispatch)
        #expect(order.operation == receipt.operations[0])
        func progress(_ operation: UInt64, _ attempt: UInt32, _ message: String) -> Opq_V1_WorkerMessage {
            .reports([.progress(.with { $0.operation = operation; $0.attempt = attempt; $0.message = message })])
        }
        // Not this worker's, not this attempt, no such operation: none of these reaches a watcher.
        try bystander.send(progress(order.operation, order.attempt, "forged by a bystander"))
        try worker.send(progress(order.operation, order.attempt + 1, "a future attempt"))
        try worker.send(progress(999, 1, "an unknown operation"))
        try worker.send(progress(UInt64.max, 1, "an id at the limit"))
        try worker.send(progress(order.operation, order.attempt, "the real one"))
        var seen: [String] = []
        while !seen.contains("the real one"), let message = try watcher.nextStreamMessage(timeout: 10) {
            guard case .events(let events) = message.body else { continue }
            for item in events.items { if case .progress(let progress) = item.kind { seen.append(progress.message) } }
        }
        #expect(seen == ["the real one"])

        // A progress message over the limit is refused: the worker is disconnected, nothing is kept.
        try worker.send(progress(order.operation, order.attempt, String(repeating: "x", count: 1 << 20)))
        let answer = try #require(try worker.next())
        guard case .disconnect(let disconnect) = answer.body else { Issue.record("expected a disconnect, got \(answer)"); return }
        #expect(disconnect.code == .malformedMessage && disconnect.reason.contains("progress.message"))
        try Self.expectServing(cluster, client, after: "a progress report of 1 MB")
    }

    @Test func repliesToAppliedRequestsAreNeverDroppedByAClientThatDoesNotRead() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let context = try Context()
        defer { context.close() }
        let flooder = try context.socket(.dealer)
        try flooder.set(.linger, 0)
        try flooder.set(.receiveHWM, 1)
        try flooder.connect(cluster.clientsEndpoint)
        let count = 12_000
        for k in 1...count {
            var spec = Opq_V1_OperationSpec()
            spec.name = "flood-\(k)"
            _ = try flooder.send(try Frames.encode(Opq_V1_ClientRequest.request(UInt64(k)) { $0.submit.operations = [spec] }))
        }
        // Only now read: every request gets one reply, and every acceptance is a job that exists.
        var accepted = Set<UInt64>()
        var refused = 0
        var replies = 0
        var poller = Poller()
        _ = try poller.add(flooder)
        while replies < count, try poller.poll(timeout: 15_000) > 0 {
            while let frames = try flooder.receiveMultipart(flags: .dontWait) {
                let message = try Frames.decode(frames, as: Opq_V1_CoordinatorToClient.self).message
                guard case .reply(let reply) = message.body else { continue }
                replies += 1
                switch reply.result {
                case .submitted(let receipt): accepted.insert(receipt.job)
                case .error(let error):
                    #expect(error.code == .internal && error.message.contains("replies to this connection are still unread"))
                    refused += 1
                default: Issue.record("unexpected reply \(reply)")
                }
            }
        }
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        var jobs = 0
        var after: UInt64 = 0
        while true {
            let page = try client.request { $0.listJobs.after = after; $0.listJobs.limit = 10_000 }.reply.jobs
            jobs += page.jobs.count
            guard page.more, let last = page.jobs.last else { break }
            after = last.id
        }
        #expect(accepted.count == jobs, "\(jobs) jobs exist, \(accepted.count) acceptances arrived (\(refused) refusals, \(replies) replies)")
        #expect(accepted.count + refused <= count)
        try Self.expectServing(cluster, client, after: "a flood of unread requests")
    }

    @Test(arguments: [
        "tcp://127.0.0.1:0;0.0.0.0:7130",
        "tcp://0.0.0.0:0",
        "tcp://*:0",
        "tcp://[::]:0",
        "tcp://eth0:0",
    ])
    func anEndpointReachableFromOtherMachinesIsRefused(_ endpoint: String) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let process = try ChildProcess(
            "opq-coordinator",
            ["--workers-endpoint", endpoint, "--clients-endpoint", cluster.clientsEndpoint, "--state", cluster.stateDirectory],
            name: "refused", logDirectory: cluster.directory)
        defer { process.stop() }
        let status = try #require(process.waitForExit(within: 30), "\(endpoint) was bound:\n\(process.output)")
        #expect(status != 0)
        #expect(process.output.contains("invalid endpoint '\(endpoint)'"), "\(process.output)")
    }

    /// A loopback port free at this moment.
    static func freePort(host: String) throws -> Int {
        let context = try Context()
        defer { context.close() }
        let socket = try context.socket(.router)
        defer { socket.close() }
        let bound = try socket.bind(try Endpoint(parsing: "tcp://\(host):*"))
        return try #require(Int(bound.split(separator: ":").last ?? ""))
    }

    @Test(arguments: ["localhost", "[::1]"])
    func loopbackNamesAndIPv6WorkAsEndpoints(_ host: String) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let endpoint = "tcp://\(host):\(try Self.freePort(host: host))"
        let process = try ChildProcess(
            "opq-coordinator",
            ["--workers-endpoint", cluster.workersEndpoint, "--clients-endpoint", endpoint, "--state", cluster.stateDirectory],
            name: "coordinator", logDirectory: cluster.directory)
        defer { process.stop() }
        let client = try CoordinatorConnection(endpoint: endpoint)
        let receipt = try client.submit(Submission([OperationSpec(name: "over \(host)")]))
        #expect(receipt.operations == [1], "\(process.output)")
    }

    @Test func ipcInAPrivateDirectoryServesOnlyItsOwner() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let directory = cluster.path("private")
        let process = try ChildProcess(
            "opq-coordinator", ["--ipc", directory, "--state", cluster.stateDirectory],
            name: "coordinator", logDirectory: cluster.directory)
        defer { process.stop() }
        let client = try CoordinatorConnection(endpoint: "ipc://\(directory)/clients")
        _ = try client.submit(Submission([OperationSpec(name: "private")]))
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int)
        #expect(mode == 0o700)
        #expect(process.output.contains("workers=ipc://\(directory)/workers clients=ipc://\(directory)/clients"))

        let open = cluster.path("open")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        let refused = try ChildProcess(
            "opq-coordinator", ["--ipc", open, "--state", cluster.path("state-2")], name: "refused", logDirectory: cluster.directory)
        defer { refused.stop() }
        #expect(try #require(refused.waitForExit(within: 30)) != 0)
        #expect(refused.output.contains("other users may enter the directory (mode 755): chmod 700 it first"), "\(refused.output)")
    }
}
