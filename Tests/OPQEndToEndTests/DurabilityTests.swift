import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing

/// SEMANTICS §10 with the real executables: the coordinator is killed with SIGKILL at chosen moments and
/// restarted on the same state directory; what ran is read from the files the commands write.
@Suite(.serialized) struct DurabilityTests {
    /// Seconds recovered attempts wait for their workers: long, so only a worker's own report (not the
    /// clock) decides what happens to them here.
    static let grace = ["--recovery-grace", "30"]

    /// A coordinator (with ``grace``) and `workers` workers of `slots` slots, and a client.
    static func start(workers: Int = 1, slots: Int = 2) throws -> (TestCluster, CoordinatorConnection) {
        let cluster = try TestCluster()
        try cluster.startCoordinator(grace)
        for k in 1...workers { try cluster.startWorker("w\(k)", slots: slots) }
        return (cluster, try CoordinatorConnection(endpoint: cluster.clientsEndpoint))
    }

    /// `kill -9` of the coordinator, a restart on the same state directory, and a new client.
    static func restart(_ cluster: TestCluster) throws -> CoordinatorConnection {
        cluster.killCoordinator()
        try cluster.startCoordinator(grace)
        return try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
    }

    /// Runs `script` in python3 (its sqlite3 module: the journal as another SQLite program sees it).
    static func python(_ script: String) throws {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script]
        try python.run()
        python.waitUntilExit()
        #expect(python.terminationStatus == 0, "python3 -c \(script)")
    }

    /// Starts the coordinator over the journal as it is and expects a refusal: exit status 2, `message` in
    /// its output, and the journal file byte for byte as it was. Returns the output.
    @discardableResult
    static func expectRefusalToStart(_ cluster: TestCluster, saying message: String) throws -> String {
        let journal = URL(fileURLWithPath: cluster.stateDirectory + "/journal.sqlite")
        let before = try Data(contentsOf: journal)
        try cluster.startCoordinator()
        let coordinator = try #require(cluster.coordinator)
        let status = try #require(coordinator.waitForExit(within: 30), "the coordinator started over the journal\n\(coordinator.output)")
        #expect((status >> 8) & 0xFF == 2)
        #expect(coordinator.output.contains(message), "\(coordinator.output)")
        #expect(try Data(contentsOf: journal) == before, "the journal was changed")
        return coordinator.output
    }

    @Test(arguments: 1...10)
    func killingTheCoordinatorDuringA500OperationDAGLosesNothingAndRunsEverythingOnce(seed: UInt64) throws {
        let (cluster, connection) = try Self.start(workers: 3, slots: 3)
        var client = connection
        defer { cluster.stop() }
        func restart() throws { client = try Self.restart(cluster) }

        // 500 operations in 5 submissions; each depends on up to 3 earlier ones (by name within its
        // submission, by id across submissions).
        let file = cluster.path("intervals")
        var random = SplitMix64(seed: seed &* 7_919)
        let killAfterSubmission = Int(random.next() % 6)  // 5 = none
        var dependencies: [String: [String]] = [:]
        var ids: [String: UInt64] = [:]
        var jobs: [UInt64] = []
        for batch in 0..<5 {
            var specs: [OperationSpec] = []
            for k in batch * 100..<(batch + 1) * 100 {
                let name = "op\(k)"
                let after = k == 0 ? [] : Array(Set((0..<Int(random.next() % 4)).map { _ in "op\(Int(random.next() % UInt64(k)))" }))
                dependencies[name] = after
                specs.append(OperationSpec(name: name, work: Evidence.interval(name, to: file, sleep: 0), dependencies: after.map { dependency in
                    ids[dependency].map { .id(OperationID($0)) } ?? .name(dependency)
                }))
            }
            let key = "seed-\(seed)-batch-\(batch)"
            let receipt = try client.submit(Submission(specs), idempotencyKey: key)
            if batch == killAfterSubmission {
                // Acknowledged, then the coordinator dies at once: the job must be there after a
                // restart, and a resend with the same key returns it rather than a second job.
                try restart()
                let again = try client.submit(Submission(specs), idempotencyKey: key)
                #expect(again.duplicate && again.job == receipt.job && again.operations == receipt.operations)
            }
            jobs.append(receipt.job)
            for (spec, id) in zip(specs, receipt.operations) { ids[spec.name] = id }
        }
        // Three more kills, each as soon as a (seeded) operation finishes: mid-run, or at once after a
        // restart (while recovered attempts are being reconciled) when it had already finished.
        for _ in 0..<3 {
            let operation = ids["op\(random.next() % 500)"]!
            let waited = try client.request(timeout: 130) { $0.wait.operation = operation; $0.wait.timeoutSeconds = 120 }.reply.waited
            #expect(!waited.timedOut, "seed \(seed): op \(operation) did not finish\n\(cluster.logs)")
            try restart()
        }
        for job in jobs {
            let info = try client.finish(job, within: 120, cluster: cluster)
            #expect(info.counts.succeeded == 100, "job \(job): \(info.counts)\n\(cluster.logs)")
        }

        var start: [String: Double] = [:]
        var end: [String: Double] = [:]
        for line in Evidence.lines(file) {
            let parts = line.split(separator: " ")
            guard parts.count == 3, let time = Double(parts[2]) else { continue }
            let name = String(parts[1])
            if parts[0] == "start" {
                #expect(start[name] == nil, "seed \(seed): \(name) started twice")
                start[name] = time
            } else {
                #expect(end[name] == nil, "seed \(seed): \(name) completed twice")
                end[name] = time
            }
        }
        #expect(start.count == 500 && end.count == 500, "seed \(seed): \(start.count) started, \(end.count) completed")
        for (name, after) in dependencies {
            for dependency in after {
                guard let began = start[name], let done = end[dependency] else { continue }
                #expect(began >= done, "seed \(seed): \(name) started before its dependency \(dependency) finished")
            }
        }
    }

    @Test func finishesAcknowledgedAcrossManyWALCheckpointsSurviveAKill() throws {
        let (cluster, connection) = try Self.start(workers: 1, slots: 1)
        var client = connection
        defer { cluster.stop() }
        // A chain of no-op handlers, a loop turn and a commit (a WAL frame or more) per link: the WAL is written back
        // in the background and checkpointed several times over (issue 19), then the coordinator dies
        // without closing it.
        let count = 3_000
        let receipt = try client.submit(Submission((0..<count).map { k in
            OperationSpec(name: "op\(k)", work: .handler(name: "noop", payload: []), dependencies: k == 0 ? [] : [.name("op\(k - 1)")])
        }))
        #expect(try client.finish(receipt.job, within: 120, cluster: cluster).counts.succeeded == count)
        let walBytes = (try? FileManager.default.attributesOfItem(atPath: cluster.stateDirectory + "/journal.sqlite-wal")[.size] as? Int) ?? 0
        #expect(walBytes <= 32 + 2_004 * (4_096 + 24), "the WAL grew to \(walBytes) bytes")
        client = try Self.restart(cluster)
        let job = try client.request { $0.getJob.job = receipt.job }.reply.job
        #expect(job.counts.succeeded == count, "\(job.counts)\n\(cluster.logs)")
    }

    @Test func aSuspendedQueueStaysSuspendedAcrossARestart() throws {
        let (cluster, connection) = try Self.start()
        var client = connection
        defer { cluster.stop() }
        try client.configure("held", QueueSettings(isSuspended: true))
        let file = cluster.path("ran")
        let receipt = try client.submit(Submission((1...4).map {
            OperationSpec(name: "op\($0)", queue: "held", work: Evidence.append("op\($0)", to: file))
        }))

        client = try Self.restart(cluster)
        let queues = try client.request { $0.listQueues = Opq_V1_ListQueues() }.reply.queues.queues
        let held = try #require(queues.first { $0.name == "held" })
        #expect(held.suspended)
        #expect(held.counts.ready == 4)
        let early = try client.wait(job: JobID(receipt.job), timeout: 0.5)
        #expect(early.timedOut)
        #expect(Evidence.lines(file).isEmpty)

        try client.configure("held", QueueSettings(isSuspended: false))
        let job = try client.finish(receipt.job, within: 60, cluster: cluster)
        #expect(job.counts.succeeded == 4)
        #expect(Evidence.lines(file).sorted() == ["op1", "op2", "op3", "op4"])
    }

    @Test func aCancelAllAcknowledgedJustBeforeACrashHoldsAfterTheRestart() throws {
        let (cluster, connection) = try Self.start()
        var client = connection
        defer { cluster.stop() }
        let running = try (1...2).map { try Signal(cluster.path("running\($0)")) }
        let file = cluster.path("ran")
        // Two long operations that say when they run, and pending ones behind them.
        var specs = (1...2).map { k in
            OperationSpec(name: "long\(k)", work: .command(Command(["/bin/sh", "-c", "echo \"$0\" > \"$1\"; sleep 60; echo \"$0\" >> \"$2\"",
                                                                       "long\(k)", running[k - 1].path, file])))
        }
        specs += (1...6).map { OperationSpec(name: "later\($0)", work: Evidence.append("later\($0)", to: file), dependencies: [.name("long1")]) }
        let receipt = try client.submit(Submission(specs))
        for signal in running { #expect(signal.wait(within: 30) != nil, "not both started\n\(cluster.logs)") }

        let cancelled = try client.request { $0.cancel.queue = "default" }.reply.cancelled
        #expect(cancelled.operations.count == 8)
        client = try Self.restart(cluster)  // the kills of the running operations may not have gone out

        let job = try client.finish(receipt.job, within: 60, cluster: cluster)
        #expect(job.counts.cancelled == 8, "\(job.counts)\n\(cluster.logs)")
        #expect(Evidence.lines(file).isEmpty, "ran after the cancel: \(Evidence.lines(file))")
    }

    @Test func aWorkerThatKeptRunningThroughTheOutageKeepsItsResults() throws {
        let (cluster, connection) = try Self.start()
        var client = connection
        defer { cluster.stop() }
        let started = try Signal(cluster.path("started"))
        let startedLong = try Signal(cluster.path("started-long"))
        let finished = try Signal(cluster.path("finished"))
        let release = cluster.path("release")
        let file = cluster.path("ran")
        // `short` finishes while the coordinator is down; `long` is still running when it comes back.
        let short = OperationSpec(name: "short", work: .command(Command(["/bin/sh", "-c",
            "echo short > \"$1\"; while [ ! -e \"$2\" ]; do sleep 0.05; done; echo short >> \"$0\"; echo done > \"$3\"",
            file, started.path, release, finished.path])))
        let long = OperationSpec(name: "long", work: .command(Command(["/bin/sh", "-c",
            "echo long > \"$1\"; while [ ! -e \"$2.long\" ]; do sleep 0.05; done; echo long >> \"$0\"", file, startedLong.path, release])))
        let receipt = try client.submit(Submission([short, long]))
        #expect(started.wait(within: 30) != nil && startedLong.wait(within: 30) != nil, "not both started\n\(cluster.logs)")

        cluster.killCoordinator()
        #expect(FileManager.default.createFile(atPath: release, contents: nil))
        #expect(finished.wait(within: 30) != nil, "short did not finish during the outage\n\(cluster.logs)")
        try cluster.startCoordinator(Self.grace)
        client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        #expect(FileManager.default.createFile(atPath: release + ".long", contents: nil))

        let job = try client.finish(receipt.job, within: 60, cluster: cluster)
        #expect(job.counts.succeeded == 2, "\(job.counts)\n\(cluster.logs)")
        #expect(Evidence.lines(file).sorted() == ["long", "short"])
        for id in receipt.operations {
            let info = try client.operation(OperationID(id)).info
            #expect(info.attempt == 1, "\(info.name) ran as attempt \(info.attempt)")
        }
    }

    @Test func anAttemptWhoseWorkerNeverComesBackGetsANewAttemptAfterTheGracePeriod() throws {
        let (cluster, connection) = try Self.start()
        var client = connection
        defer { cluster.stop() }
        let started = try Signal(cluster.path("started"))
        let file = cluster.path("ran")
        let receipt = try client.submit(Submission([OperationSpec(name: "job", work: .command(Command(["/bin/sh", "-c",
            "echo \"$2\" > \"$1\"; sleep 60; echo \"$2\" >> \"$0\"", file, started.path, "attempt"])), retries: 0)]))
        #expect(started.wait(within: 30) != nil, "it did not start\n\(cluster.logs)")

        // Its worker dies with the coordinator and never comes back; another worker joins.
        cluster.killCoordinator()
        cluster.workers["w1"]?.stop()
        try cluster.startCoordinator(["--recovery-grace", "1"])
        try cluster.startWorker("w2", slots: 1)
        client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        #expect(started.wait(within: 30) != nil, "no new attempt after the grace period\n\(cluster.logs)")
        let info = try client.operation(OperationID(receipt.operations[0])).info
        #expect(info.attempt == 2 && info.worker == "w2", "attempt \(info.attempt) on '\(info.worker)'")
        _ = try client.request { $0.cancel.job = receipt.job }
        #expect(try client.finish(receipt.job, within: 60, cluster: cluster).counts.cancelled == 1)
    }

    /// A second coordinator on the same state directory exits with status 2 — also when the first one's
    /// lock file was removed (the journal file itself stays locked) — and the first one keeps its journal.
    @Test(arguments: [false, true])
    func aSecondCoordinatorOnTheSameStateDirectoryRefusesToStart(lockFileRemoved: Bool) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        _ = try client.request { $0.listQueues = Opq_V1_ListQueues() }  // the first one is up, its journal open
        if lockFileRemoved { try FileManager.default.removeItem(atPath: cluster.stateDirectory + "/lock") }
        let second = try ChildProcess(
            "opq-coordinator",
            ["--workers-endpoint", "ipc://\(cluster.path("w2.sock"))", "--clients-endpoint", "ipc://\(cluster.path("c2.sock"))",
             "--state", cluster.stateDirectory],
            name: "second", logDirectory: cluster.directory)
        defer { second.stop() }
        let status = try #require(second.waitForExit(within: 30), "a second coordinator runs on the same journal")
        #expect((status >> 8) & 0xFF == 2)
        let expected = lockFileRemoved ? "journal.sqlite is locked by another process" : "is in use by another opq-coordinator"
        #expect(second.output.contains(expected), "\(second.output)")
        #expect(cluster.coordinator?.isRunning == true)
        // The first one still owns the journal: what it acknowledges survives its restart.
        let receipt = try client.submit(Submission([OperationSpec(name: "a")]))
        #expect(receipt.job == 1)
        let restarted = try Self.restart(cluster)
        #expect(try restarted.request { $0.getJob.job = receipt.job }.reply.job.id == receipt.job)
    }

    @Test func aJournalTwoCoordinatorsWroteIsAClearErrorAndLeftUntouched() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        _ = try client.submit(Submission([OperationSpec(name: "a")]), idempotencyKey: "first")
        cluster.coordinator?.signal(SIGTERM)
        #expect(cluster.coordinator?.waitForExit(within: 30) != nil, "the coordinator did not stop\n\(cluster.logs)")
        // What two coordinators acknowledging job-1 each leave behind: two commits claiming it.
        let journal = cluster.stateDirectory + "/journal.sqlite"
        try Self.python("""
            import sqlite3; c = sqlite3.connect('\(journal)')
            c.execute('insert into journal (entries) select entries from journal order by seq limit 1'); c.commit(); c.close()
            """)
        let output = try Self.expectRefusalToStart(cluster, saying: "the journal \(journal) cannot be replayed at commit")
        #expect(output.contains("the submission of job-1 (op-1) with idempotency key 'first'") && output.contains("two coordinators"), "\(output)")
    }

    @Test(arguments: ["garbage", "sqlite", "empty"])
    func aDamagedStateFileIsAClearErrorNotAFreshStart(kind: String) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try FileManager.default.createDirectory(atPath: cluster.stateDirectory, withIntermediateDirectories: true)
        let journal = cluster.stateDirectory + "/journal.sqlite"
        switch kind {
        case "garbage":
            try Data(repeating: 0x5A, count: 8_192).write(to: URL(fileURLWithPath: journal))
            try Self.expectRefusalToStart(cluster, saying: "is damaged or not an opq journal")
        case "sqlite":
            // A valid SQLite file that is not an opq journal.
            try Self.python("import sqlite3; c = sqlite3.connect('\(journal)'); c.execute('create table t (x)'); c.commit()")
            try Self.expectRefusalToStart(cluster, saying: "is damaged or not an opq journal")
        default:
            // 0 bytes: opq never leaves such a file, so it is not taken for a fresh start.
            #expect(FileManager.default.createFile(atPath: journal, contents: Data()))
            let output = try Self.expectRefusalToStart(cluster, saying: "the journal \(journal) is empty (0 bytes)")
            #expect(output.contains("move it away"), "\(output)")
        }
    }

    @Test func pruneForgetsFinishedJobsAlsoAcrossARestartAndNeverReusesTheirIds() throws {
        let (cluster, connection) = try Self.start()
        var client = connection
        defer { cluster.stop() }
        let file = cluster.path("ran")
        let first = try client.submit(Submission([OperationSpec(name: "a", work: Evidence.append("a", to: file))]))
        _ = try client.finish(first.job, within: 60, cluster: cluster)
        try client.configure("default", QueueSettings(isSuspended: true))
        let second = try client.submit(Submission([OperationSpec(name: "b", work: Evidence.append("b", to: file),
                                                                 dependencies: [.id(OperationID(first.operations[0]))])]))

        let recent = try client.request { $0.prune.olderThanSeconds = 3_600 }.reply.pruned
        #expect(recent.jobs.isEmpty)
        let pruned = try client.request { $0.prune = Opq_V1_Prune() }.reply.pruned
        #expect(pruned.jobs == [first.job] && pruned.operations == 1)
        #expect(throws: ClientError.self) { try client.request { $0.getJob.job = first.job } }

        client = try Self.restart(cluster)
        #expect(throws: ClientError.self) { try client.request { $0.getJob.job = first.job } }
        let third = try client.submit(Submission([OperationSpec(name: "c", work: Evidence.append("c", to: file))]))
        #expect(third.job == second.job + 1 && third.operations[0] == second.operations[0] + 1)
        try client.configure("default", QueueSettings(isSuspended: false))
        _ = try client.finish(second.job, within: 60, cluster: cluster)
        _ = try client.finish(third.job, within: 60, cluster: cluster)
        #expect(Evidence.lines(file).sorted() == ["a", "b", "c"])
    }
}
