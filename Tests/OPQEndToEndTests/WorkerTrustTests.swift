import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// Trust between workers and the coordinator (SEMANTICS §12) and "never two running copies" (§7,
/// leases), with the real executables over real ZeroMQ.
@Suite(.serialized) struct WorkerTrustTests {
    /// A FIFO the test holds open for reading from the start, so commands write to it without ever
    /// blocking or losing a line (whether or not the test is reading at that moment).
    final class HeldFifo {
        let path: String
        private let fd: Int32
        private var buffered = ""

        init(_ path: String) throws {
            guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            self.path = path
        }

        deinit { close(fd) }

        /// The next `count` lines, or what arrived by the deadline.
        func lines(_ count: Int, within seconds: Double) -> [String] {
            let deadline = Date().addingTimeInterval(seconds)
            while buffered.filter({ $0 == "\n" }).count < count, Date() < deadline {
                var item = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&item, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let got = read(fd, &buffer, buffer.count)
                if got > 0 { buffered += String(decoding: buffer[..<got], as: UTF8.self) }
            }
            let all = buffered.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let complete = Array(all.dropLast().prefix(count))
            buffered = (all.dropFirst(complete.count)).joined(separator: "\n")
            return complete
        }
    }

    /// A DEALER played by the test with a chosen routing id (the name of a live worker, say).
    final class Impostor {
        let socket: Socket
        init(_ context: Context, routingID: String, endpoint: String) throws {
            socket = try context.socket(.dealer)
            try socket.set(.routingID, Array(routingID.utf8))
            try socket.set(.linger, 0)
            try socket.connect(endpoint)
        }

        func send(_ message: Opq_V1_WorkerMessage, raw: [[UInt8]] = []) throws {
            _ = try socket.send(try Frames.encode(message, raw: raw))
        }

        /// Every message received within `seconds`.
        func received(within seconds: Double) throws -> [Opq_V1_CoordinatorToWorker] {
            var poller = Poller()
            _ = try poller.add(socket)
            var messages: [Opq_V1_CoordinatorToWorker] = []
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                guard try poller.poll(timeout: Int(deadline.timeIntervalSinceNow * 1000) + 1) > 0 else { continue }
                while let frames = try socket.receiveMultipart(flags: .dontWait) {
                    messages.append(try Frames.decode(frames, as: Opq_V1_CoordinatorToWorker.self).message)
                }
            }
            return messages
        }
    }

    @Test func anImpostorWithALiveWorkersNameGetsNothingAndCannotForgeItsResult() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1")
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let fifo = try HeldFifo(cluster.path("started"))
        let gate = cluster.path("gate")
        // Runs until the test creates the gate file, then prints the real result.
        let work = Work.command(Command(["/bin/sh", "-c",
            "echo go > \"$0\"; while [ ! -e \"$1\" ]; do sleep 0.05; done; echo real-output", fifo.path, gate]))
        let receipt = try client.submit(Submission([OperationSpec(name: "victim", work: work)]))
        try #require(fifo.lines(1, within: 30) == ["go"], "the command did not start\n\(cluster.logs)")
        let operation = OperationID(receipt.operations[0])

        let context = try Context()
        defer { context.close() }
        // The attack of issue 11: the worker's name as routing id, a registration claiming its running
        // attempt, and a forged success for it.
        let impostor = try Impostor(context, routingID: "w1", endpoint: cluster.workersEndpoint)
        var register = Opq_V1_WorkerMessage()
        register.register.protocolVersion = WireLimits.protocolVersion
        register.register.workerName = "w1"
        register.register.slots = 4
        register.register.held = [Opq_V1_AttemptRef(operation, attempt: 1)]
        try impostor.send(register)
        var forged = Opq_V1_Finished(operation, attempt: 1, report: .succeeded, duration: 0.01)
        var raw: [[UInt8]] = []
        forged.stdout = Opq_V1_OutputTail.attach(Array("forged".utf8), to: &raw)
        try impostor.send(.reports([.finished(forged)]), raw: raw)
        // The same with a routing id of its own.
        let second = try Impostor(context, routingID: "someone-else", endpoint: cluster.workersEndpoint)
        try second.send(register)
        try second.send(.reports([.finished(forged)]), raw: raw)

        let heard = try impostor.received(within: 2) + second.received(within: 1)
        for message in heard {
            guard case .disconnect(let disconnect) = message.body else {
                Issue.record("an impostor was sent \(message)")
                continue
            }
            #expect([.workerNameInUse, .malformedMessage].contains(disconnect.code), "\(disconnect)")
        }
        #expect(heard.contains { if case .disconnect(let d) = $0.body { d.code == .workerNameInUse } else { false } },
                "the second registration is refused by name\n\(cluster.logs)")
        let before = try client.operation(operation).info
        #expect(before.state == .executing, "the forged finish was not taken: \(before.state)")

        FileManager.default.createFile(atPath: gate, contents: nil)
        let job = try client.finish(receipt.job, within: 30, cluster: cluster)
        #expect(job.counts.succeeded == 1)
        let (info, output) = try client.operation(operation, includeOutput: true)
        #expect(info.attempt == 1)
        #expect(info.stdout.bytes(in: output) == Array("real-output\n".utf8), "the real result is the one stored")
        #expect(cluster.workers["w1"]!.isRunning)
    }

    /// A name in use is refused by the coordinator; a slot count no coordinator accepts is refused by the
    /// worker's own flag check (the same `Limits` the coordinator applies), before it ever registers.
    @Test(arguments: [
        (["--name", "w1", "--slots", "1"], ["refused to register this worker", "in use"]),
        (["--name", "w2", "--slots", "99999999999"], ["--slots must be a whole number from 1 to 1048576, not 99999999999"]),
    ])
    func aRefusedRegistrationEndsTheWorkerWithTheReason(arguments: [String], reasons: [String]) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(["--heartbeat", "0.5", "--liveness", "3"])
        try cluster.startWorker("w1")
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let receipt = try client.submit(Submission([OperationSpec(name: "first", work: .command(Command(["true"])))]))
        _ = try client.finish(receipt.job, within: 30, cluster: cluster)  // w1 is registered

        let refused = try ChildProcess(
            "opq-worker", ["--coordinator", cluster.workersEndpoint, "--heartbeat", "0.5"] + arguments,
            name: "refused", logDirectory: cluster.directory)
        defer { refused.stop() }
        let status = try #require(refused.waitForExit(within: 60), "the refused worker kept retrying\n\(refused.output)")
        #expect(status & 0x7f == 0 && (status >> 8) & 0xff != 0, "exit status \(status)")
        for reason in reasons { #expect(refused.output.contains(reason), "\(refused.output)") }
        #expect(cluster.workers["w1"]!.isRunning)
    }

    @Test func aWorkerRestartedUnderItsNameRightAfterACrashRegistersOnceTheOldSessionIsLost() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(["--heartbeat", "0.5", "--liveness", "3"])
        try cluster.startWorker("w1", arguments: ["--heartbeat", "0.5"])
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let first = try client.submit(Submission([OperationSpec(name: "first", work: .command(Command(["true"])))]))
        _ = try client.finish(first.job, within: 30, cluster: cluster)

        cluster.workers["w1"]!.stop()  // kill -9: its session lives on until it is declared lost
        try cluster.startWorker("w1", arguments: ["--heartbeat", "0.5"])
        let second = try client.submit(Submission([OperationSpec(name: "second", work: .command(Command(["true"])))]))
        #expect(try client.finish(second.job, within: 30, cluster: cluster).counts.succeeded == 1)
        #expect(cluster.workers["w1"]!.isRunning, "the restarted worker did not give up\n\(cluster.logs)")
    }

    @Test func aWorkerStoppedPastItsLeaseNeverRunsAnOperationAtTheSameTimeAsItsReplacement() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(["--heartbeat", "0.5", "--liveness", "3"])
        try cluster.startWorker("w1", slots: 2, arguments: ["--heartbeat", "0.5", "--label", "who=w1"])
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let fifo = try HeldFifo(cluster.path("started"))
        let log = cluster.path("runs")
        // Each run holds an exclusive flock on its operation's lock file for as long as any of its
        // processes lives; a second copy that finds it held records "twice".
        let script = """
            exec 9>"$2/$0.lock"
            if flock -n 9; then
              echo "start $0 $PPID $(date +%s.%N)" >> "$1"
              echo "$0 $PPID" > "$3"
              sleep 6
              echo "end $0 $PPID $(date +%s.%N)" >> "$1"
            else
              echo "twice $0 $PPID $(date +%s.%N)" >> "$1"
              exit 3
            fi
            """
        let names = ["op1", "op2"]
        let receipt = try client.submit(Submission(names.map {
            OperationSpec(name: $0, work: .command(Command(["/bin/sh", "-c", script, $0, log, cluster.directory.path, fifo.path])))
        }))
        let first = fifo.lines(2, within: 30)
        let w1 = cluster.workers["w1"]!
        try #require(first.count == 2 && first.allSatisfy { $0.hasSuffix(" \(w1.pid)") }, "\(first)\n\(cluster.logs)")

        // An idle replacement, then w1 stalls well past its lease (1.5 s) with both commands running.
        try cluster.startWorker("w2", slots: 2, arguments: ["--heartbeat", "0.5"])
        w1.signal(SIGSTOP)
        defer { w1.signal(SIGCONT) }
        let job = try client.finish(receipt.job, within: 60, cluster: cluster)
        let reruns = fifo.lines(2, within: 5)
        #expect(reruns.count == 2 && reruns.allSatisfy { !$0.hasSuffix(" \(w1.pid)") }, "\(reruns)")
        w1.signal(SIGCONT)
        #expect(job.counts.succeeded == 2)

        // w1 wakes up: it finds its lease over, reports nothing, and registers again (an operation only
        // it can run finishes).
        let only = OperationSpec(name: "after", work: .command(Command(["true"])), labels: ["who": "w1"])
        let rejoined = try client.finish(try client.submit(Submission([only])).job, within: 30, cluster: cluster)
        #expect(rejoined.counts.succeeded == 1)
        #expect(w1.output.components(separatedBy: "registered with the coordinator").count - 1 >= 2, "\(w1.output)")

        let lines = Evidence.lines(log)
        #expect(lines.filter { $0.hasPrefix("twice") }.isEmpty, "an operation ran twice at the same time:\n\(lines)")
        for name in names {
            #expect(lines.filter { $0.hasPrefix("end \(name) ") }.count == 1, "\(name) ended once:\n\(lines)")
            #expect(lines.filter { $0.hasPrefix("end \(name) \(w1.pid) ") }.isEmpty, "w1's copy was killed:\n\(lines)")
            let info = try client.operation(OperationID(receipt.operations[names.firstIndex(of: name)!])).info
            #expect(info.outcome == .succeeded && info.attempt >= 2)
        }
        #expect(w1.output.components(separatedBy: "attempt stopped by the lease's end; not reported").count - 1 == 2, "\(w1.output)")
        let stale = cluster.coordinator!.output.split(separator: "\n").filter { $0.contains("stale report ignored") }
        #expect(stale.isEmpty, "w1 reported nothing stale:\n\(stale.joined(separator: "\n"))\n\(w1.output)")
    }
}
