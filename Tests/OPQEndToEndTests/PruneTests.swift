import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// A Prune handled in the same loop turn as what it forgets (found by `CoordinatorFuzzTests`, issue 11).
/// The coordinator is stopped (SIGSTOP) while the messages of one turn are queued, then continued
/// (SIGCONT): messages on one connection that wait in its socket when the coordinator wakes are read in
/// one go, so they are handled in one turn; a worker's messages are handled before clients' in a turn.
@Suite(.serialized) struct PruneTests {
    typealias FakeWorker = CoordinatorProtocolTests.FakeWorker

    /// A DEALER on the clients socket that sends requests without waiting for their replies.
    final class RawClient {
        let socket: Socket
        init(_ context: Context, endpoint: String) throws {
            socket = try context.socket(.dealer)
            try socket.set(.linger, 0)
            try socket.connect(endpoint)
        }

        /// Sends request `id`; returns its frames.
        @discardableResult
        func send(_ id: UInt64, _ fill: (inout Opq_V1_ClientRequest) -> Void) throws -> [[UInt8]] {
            let frames = try Frames.encode(Opq_V1_ClientRequest.request(id, fill))
            _ = try socket.send(frames)
            return frames
        }

        /// The reply to request `id` within `seconds` (other replies are dropped); it must decode and
        /// validate as a message to a client.
        func reply(to id: UInt64, within seconds: Double = 20) throws -> Opq_V1_Reply? {
            var poller = Poller()
            _ = try poller.add(socket)
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                guard try poller.poll(timeout: Int(deadline.timeIntervalSinceNow * 1000) + 1) > 0,
                      let frames = try socket.receiveMultipart(flags: .dontWait) else { continue }
                let message = try Frames.decode(frames, as: Opq_V1_CoordinatorToClient.self).message
                if case .reply(let reply) = message.body, reply.requestID == id { return reply }
            }
            return nil
        }
    }

    /// Sends what `queue` sends (returning the frames sent to each socket path) while the coordinator
    /// is stopped, waits until all of it is in the coordinator's socket buffers, then lets it run: all
    /// of it waits there when the coordinator wakes.
    static func whileStopped(_ cluster: TestCluster, _ queue: () throws -> [String: [[[UInt8]]]]) throws {
        let coordinator = try #require(cluster.coordinator)
        coordinator.signal(SIGSTOP)
        defer { coordinator.signal(SIGCONT) }
        // kill(2) returns before the process stops: until every thread has, its I/O thread could still
        // take what is sent (and the loop handle it in a turn of its own).
        let stopping = Date().addingTimeInterval(20)
        while !isStopped(coordinator.pid) {
            try #require(Date() < stopping, "the coordinator did not stop")
        }
        let sent = try queue()
        // ZMTP 3 framing: a flags byte and a one-byte size, or eight bytes for a frame over 255 bytes.
        let expected = sent.mapValues { messages in messages.joined().reduce(0) { $0 + $1.count + ($1.count < 256 ? 2 : 9) } }
        let deadline = Date().addingTimeInterval(20)
        while expected.contains(where: { path, bytes in unreadBytes(at: path) < bytes }) {
            try #require(Date() < deadline, """
                the messages did not reach the coordinator's sockets: expected \(expected), \
                found \(expected.keys.map { ($0, unreadBytes(at: $0)) })
                """)
        }
    }

    /// Whether every thread of process `pid` is stopped (state `T` in /proc/PID/task/TID/stat).
    static func isStopped(_ pid: pid_t) -> Bool {
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !threads.isEmpty else { return false }
        return threads.allSatisfy { thread in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/stat", encoding: .utf8),
                  let end = stat.lastIndex(of: ")") else { return false }
            // "TID (comm) S …": the state follows the command name, which may contain spaces.
            return stat[stat.index(end, offsetBy: 2)...].first == "T"
        }
    }

    /// Bytes waiting unread in the connections accepted on the Unix socket at `path` (`ss`'s Recv-Q).
    static func unreadBytes(at path: String) -> Int {
        let ss = Process()
        ss.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
        ss.arguments = ["-xn"]
        let output = Pipe()
        ss.standardOutput = output
        guard (try? ss.run()) != nil else { return 0 }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        ss.waitUntilExit()
        return text.split(separator: "\n").reduce(0) { total, line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // Netid State Recv-Q Send-Q Local-Address Port Peer-Address Port
            guard fields.count >= 5, fields[4] == path, let queued = Int(fields[2]) else { return total }
            return total + queued
        }
    }

    /// The path of an `ipc://` endpoint.
    static func socketPath(_ endpoint: String) -> String { String(endpoint.dropFirst("ipc://".count)) }

    @Test func aWaitSatisfiedInThePrunesTurnIsAnsweredWithItsOperation() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        // No worker: the operation stays ready until it is cancelled.
        let receipt = try client.submit(Submission([OperationSpec(name: "waited", work: .command(Command(["true"])))]))
        let operation = try #require(receipt.operations.first)
        let context = try Context()
        defer { context.close() }
        let waiter = try RawClient(context, endpoint: cluster.clientsEndpoint)
        try waiter.send(1) { $0.wait.operation = operation; $0.wait.timeoutSeconds = 60 }
        // The Wait is registered once a later request on its connection is answered.
        try waiter.send(2) { $0.listQueues = Opq_V1_ListQueues() }
        _ = try #require(try waiter.reply(to: 2), "the coordinator did not answer")

        try Self.whileStopped(cluster) {
            let cancel = try waiter.send(3) { $0.cancel.operation = operation }
            let prune = try waiter.send(4) { $0.prune = Opq_V1_Prune() }
            return [Self.socketPath(cluster.clientsEndpoint): [cancel, prune]]
        }
        let waited = try #require(try waiter.reply(to: 1), "no answer to the Wait\n\(cluster.logs)")
        guard case .waited(let result)? = waited.result, case .operation(let info)? = result.result else {
            Issue.record("the Wait was answered with \(waited)")
            return
        }
        #expect(info.id == operation && info.outcome == .cancelled && !result.timedOut)
        let pruned = try #require(try waiter.reply(to: 4))
        #expect(pruned.pruned.jobs == [receipt.job], "the prune ran in the same turn: \(pruned)")
    }

    @Test func aDispatchDecidedInThePrunesTurnCarriesItsWork() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let context = try Context()
        defer { context.close() }
        let worker = try FakeWorker(context, name: "fake-1", endpoint: cluster.workersEndpoint, slots: 1)
        guard case .welcome = try #require(try worker.next()).body else {
            Issue.record("no welcome")
            return
        }
        let first = try client.submit(Submission([OperationSpec(name: "first", work: .command(Command(["true"])))]))
        let running = try #require(try Self.dispatches(worker.next()).first, "no dispatch of the first operation")
        // The worker's one slot is taken: the second operation waits, ready.
        let second = try client.submit(Submission([OperationSpec(name: "second", work: .command(Command(["/bin/echo", "second"])))]))
        let waiting = try #require(second.operations.first)
        let prune = try RawClient(context, endpoint: cluster.clientsEndpoint)
        // Its connection must be up (handshake done) before the coordinator stops.
        try prune.send(1) { $0.listQueues = Opq_V1_ListQueues() }
        _ = try #require(try prune.reply(to: 1), "the coordinator did not answer")

        try Self.whileStopped(cluster) {
            // In one turn: the first finishes, which dispatches the second to the freed slot; the worker
            // (which expects it) finishes the second too; then a client prunes both jobs.
            let done = { (operation: UInt64) in
                Opq_V1_Report.finished(Opq_V1_Finished(OperationID(operation), attempt: 1, report: .succeeded, duration: 0.01))
            }
            let reports = try Frames.encode(Opq_V1_WorkerMessage.reports([done(running.operation), done(waiting)]))
            _ = try worker.socket.send(reports)
            let request = try prune.send(2) { $0.prune = Opq_V1_Prune() }
            return [Self.socketPath(cluster.workersEndpoint): [reports], Self.socketPath(cluster.clientsEndpoint): [request]]
        }
        let pruned = try #require(try prune.reply(to: 2), "no answer to the Prune\n\(cluster.logs)")
        let dispatched = try Self.dispatches(worker.next())
        #expect(dispatched.map(\.operation) == [waiting], "expected the dispatch of the second operation")
        if let dispatch = dispatched.first {
            #expect(dispatch.name == "second" && dispatch.work.command.argv == ["/bin/echo", "second"], "emptied work: \(dispatch)")
        }
        #expect(pruned.pruned.jobs == [first.job, second.job], "the prune ran in the same turn: \(pruned)")
    }

    /// A client sending prunes in a loop (each forgetting the one finished job it submitted just before)
    /// while the journal holds a large unfinished job: another client is still served. Each prune used to
    /// rewrite the whole journal (here ≈ 40 MB: about a second each) and copy the core, so the other
    /// client waited behind a prune at every request; now a prune costs what it removes.
    @Test func aClientFloodingPrunesDoesNotStarveTheOthers() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(["--log-level", "info"])
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        // No worker: these stay ready, and their records stay in the journal.
        let argument = String(repeating: "x", count: 4_000)
        for batch in 0..<4 {
            _ = try client.submit(Submission((0..<2_500).map { k in
                OperationSpec(name: "big-\(batch)-\(k)", work: .command(Command(["/bin/echo", argument])))
            }), timeout: 120)
        }

        let flood = PruneFlood(endpoint: cluster.clientsEndpoint)
        let thread = Thread { flood.run() }
        thread.start()
        defer { flood.stop() }
        #expect(flood.counter.wait(within: 60) { $0["pruned", default: 0] >= 3 }, "the flood did not start: \(flood.failure ?? "")")

        let started = Date()
        let cycles = 40
        var slowest = 0.0
        let prunedBefore = flood.counter["pruned"]
        for k in 0..<cycles {
            let cycle = Date()
            // A job that stays unfinished (no worker), so the flood cannot prune it before the wait.
            let receipt = try client.submit(Submission([OperationSpec(name: "served-\(k)", work: .command(Command(["true"])))]), timeout: 60)
            let waited = try client.wait(job: JobID(receipt.job), timeout: 0.05)
            #expect(waited.timedOut && waited.job.id == receipt.job)
            slowest = max(slowest, Date().timeIntervalSince(cycle))
            try #require(Date().timeIntervalSince(started) < 60, "served \(k) of \(cycles) requests in 60 s while prunes flooded in")
        }
        let prunes = flood.counter["pruned"] - prunedBefore
        print("prune flood: \(cycles) submit+wait cycles in \(Date().timeIntervalSince(started)) s (slowest \(slowest) s) "
              + "while \(prunes) prunes were answered")
        #expect(prunes >= 3, "the flood went on while the client was served")
        #expect(flood.failure == nil)
    }

    /// Submits a job that finishes at once, prunes it, and again, until stopped.
    final class PruneFlood: @unchecked Sendable {
        let endpoint: String
        let counter = Counter()
        private let lock = NSLock()
        private var stopped = false
        private var problem: String?

        init(endpoint: String) { self.endpoint = endpoint }

        var failure: String? { lock.withLock { problem } }
        func stop() { lock.withLock { stopped = true } }

        func run() {
            do {
                let connection = try CoordinatorConnection(endpoint: endpoint)
                var k = 0
                while !lock.withLock({ stopped }) {
                    k += 1
                    _ = try connection.submit(Submission([OperationSpec(name: "flood-\(k)")]), timeout: 120)
                    let pruned = try connection.request(timeout: 120) { $0.prune = Opq_V1_Prune() }.reply.pruned
                    if !pruned.jobs.isEmpty { counter.bump("pruned") }
                }
            } catch {
                lock.withLock { problem = "\(error)" }
            }
        }
    }

    /// The dispatches in `message` (empty when it is not an Orders message).
    static func dispatches(_ message: Opq_V1_CoordinatorToWorker?) -> [Opq_V1_Dispatch] {
        guard case .orders(let orders)? = message?.body else { return [] }
        return orders.items.compactMap { if case .dispatch(let dispatch)? = $0.kind { dispatch } else { nil } }
    }
}
