import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing

/// `opq-coordinator --local-workers N`: the one-process cluster behind `opq run` and `opq map --local`
/// (workers on threads of the coordinator's process, over `inproc://`), with real commands.
@Suite(.serialized) struct OneProcessClusterTests {
    /// A coordinator with `workers` local workers of `slots` slots each, `arguments` added.
    static func start(workers: Int, slots: Int, _ arguments: [String] = [], journaled: Bool = true) throws -> TestCluster {
        let cluster = try TestCluster()
        do {
            try cluster.startCoordinator(["--local-workers", String(workers), "--local-slots", String(slots)] + arguments,
                                         journaled: journaled)
        } catch {
            cluster.stop()
            throw error
        }
        return cluster
    }

    /// The names of the workers the coordinator lists, once `count` are there (bounded wait).
    static func workerNames(_ client: CoordinatorConnection, count: Int, cluster: TestCluster) throws -> [String] {
        let deadline = Date().addingTimeInterval(30)
        while true {
            let names = try client.request { $0.listWorkers = Opq_V1_ListWorkers() }.reply.workers.workers.map(\.name)
            if names.count >= count || Date() > deadline { return names.sorted() }
            _ = cluster.coordinator?.waitForExit(within: 0.02)  // a bounded pause that also notices a crash
        }
    }

    @Test func itsLocalWorkersRunCommandsWithOutputFailureCancelAndAChain() throws {
        let cluster = try Self.start(workers: 2, slots: 2, ["--kill-grace", "1"])
        defer { cluster.stop() }
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        #expect(try Self.workerNames(client, count: 2, cluster: cluster) == ["local-1", "local-2"], "\(cluster.logs)")
        let coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        let queue = RemoteOperationQueue(name: "work", coordinator: coordinator)
        let file = cluster.path("chain")
        let started = try Signal(cluster.path("started"))
        let greeting = RemoteOperation(command: ["/bin/sh", "-c", "echo out; echo err >&2"])
        let failing = RemoteOperation(command: ["/bin/sh", "-c", "exit 3"])
        let blocked = RemoteOperation(command: ["/bin/sh", "-c", "echo up > \"$0\"; exec sleep 60", started.path])
        let links = (1...3).map { RemoteOperation(command: Script.append("link\($0)", to: file)) }
        try links[1].addDependency(links[0])
        try links[2].addDependency(links[1])
        try queue.addOperations([greeting, failing, blocked] + links, waitUntilFinished: false)
        #expect(started.wait(within: 30) == "up", "the blocked command did not start\n\(cluster.logs)")
        blocked.cancel()
        for operation in [greeting, failing, blocked] + links {
            #expect(operation.waitUntilFinished(timeout: 60), "\(operation) did not finish\n\(cluster.logs)")
        }

        #expect(greeting.outcome == .succeeded && ["local-1", "local-2"].contains(greeting.worker ?? ""))
        let output = try greeting.output()
        #expect(output.standardOutputText == "out\n" && output.standardErrorText == "err\n")
        #expect(failing.outcome == .failed && failing.exitStatus == 3)
        #expect(blocked.outcome == .cancelled)
        #expect(links.allSatisfy { $0.outcome == .succeeded })
        #expect(Evidence.lines(file) == ["link1", "link2", "link3"], "the chain ran in dependency order")
        #expect(cluster.coordinator?.isRunning == true, "\(cluster.logs)")
    }

    /// `--no-journal` (the private cluster of `opq run` and `opq map --local`): the same work, output
    /// included, and nothing written where a journal would go.
    @Test func withoutAJournalItRunsCommandsWithOutputAndWritesNoState() throws {
        let cluster = try Self.start(workers: 1, slots: 2, journaled: false)
        defer { cluster.stop() }
        let coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        let queue = RemoteOperationQueue(name: "work", coordinator: coordinator)
        let first = RemoteOperation(command: ["/bin/sh", "-c", "echo first"])
        let second = RemoteOperation(command: ["/bin/sh", "-c", "echo second >&2; exit 4"])
        try second.addDependency(first)
        try queue.addOperations([first, second], waitUntilFinished: false)
        for operation in [first, second] {
            #expect(operation.waitUntilFinished(timeout: 60), "\(operation) did not finish\n\(cluster.logs)")
        }
        #expect(first.outcome == .succeeded)
        #expect(try first.output().standardOutputText == "first\n")
        #expect(second.outcome == .failed && second.exitStatus == 4)
        #expect(try second.output().standardErrorText == "second\n")

        cluster.coordinator?.signal(SIGTERM)
        #expect(cluster.coordinator?.waitForExit(within: 30) == 0, "\(cluster.logs)")
        let fileManager = FileManager.default
        #expect(!fileManager.fileExists(atPath: cluster.stateDirectory), "no state directory")
        let stateHome = TestCluster.environment(cluster.directory)["XDG_STATE_HOME"]!
        #expect(!fileManager.fileExists(atPath: stateHome), "nothing in the default state directory either")
        let journals = (fileManager.enumerator(atPath: cluster.directory.path)?.allObjects as? [String] ?? [])
            .filter { $0.contains("journal") }
        #expect(journals.isEmpty, "\(journals)")
    }

    /// The command line opq gives its private cluster is read without ArgumentParser; mistakes in that
    /// form still get ArgumentParser's usage error (exit status 64), nothing is bound.
    @Test(arguments: [
        (["--no-journal", "--local-workers", "257"], "--local-workers must be a whole number from 0 to 256, not 257"),
        (["--no-journal", "--local-workers", "1", "--kill-grace", "soon"], "The value 'soon' is invalid for '--kill-grace <kill-grace>'"),
        (["--no-journal", "--local-slots", "2"], "--local-slots is for --local-workers N: give that too"),
        (["--no-journal", "--local-workers", "1", "--local-workers", "x"], "The value 'x' is invalid for '--local-workers <n>'"),
        (["--no-journal", "--log-level", "loud"], "unknown --log-level 'loud'"),
    ])
    func mistakesInThePrivateClustersCommandLineAreUsageErrors(arguments: [String], message: String) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let endpoints = ["--workers-endpoint", cluster.workersEndpoint, "--clients-endpoint", cluster.clientsEndpoint]
        let run = try ChildProcess("opq-coordinator", endpoints + arguments, name: "refused", logDirectory: cluster.directory)
        #expect(run.finish(within: 30) == 64)
        #expect(run.output.contains(message), "\(run.output)")
        #expect(!run.output.contains("opq-coordinator workers="), "nothing was bound")
    }

    @Test func noJournalWithAStateDirectoryIsRefused() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let run = try ChildProcess("opq-coordinator", ["--no-journal", "--state", cluster.path("state")],
                                   name: "refused", logDirectory: cluster.directory)
        #expect(run.finish(within: 30) == 64)
        #expect(run.output.contains("--no-journal keeps no state directory: leave out --state"), "\(run.output)")
        #expect(!FileManager.default.fileExists(atPath: cluster.path("state")))
    }

    @Test func sigtermStopsTheWorkersThenTheCoordinatorAndNoCommandOutlivesIt() throws {
        let cluster = try Self.start(workers: 2, slots: 1, ["--kill-grace", "1"])
        defer { cluster.stop() }
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        #expect(try Self.workerNames(client, count: 2, cluster: cluster).count == 2, "\(cluster.logs)")
        // Two commands that ignore nothing and leave a grandchild in their process group.
        var groups: [Int32] = []
        var specs: [OperationSpec] = []
        var signals: [Signal] = []
        for k in 1...2 {
            let signal = try Signal(cluster.path("up-\(k)"))
            signals.append(signal)
            specs.append(OperationSpec(name: "long-\(k)", work: .command(Command([
                "/bin/sh", "-c", "sleep 60 & echo $$ > \"$0\"; wait", signal.path]))))
        }
        _ = try client.submit(Submission(specs))
        for signal in signals {
            let line = signal.wait(within: 30)
            #expect(line != nil, "a command did not start\n\(cluster.logs)")
            if let line, let group = Int32(line) { groups.append(group) }
        }
        #expect(groups.count == 2)
        #expect(groups.allSatisfy { kill(-$0, 0) == 0 }, "the commands' process groups run")

        cluster.coordinator?.signal(SIGTERM)
        let status = cluster.coordinator?.waitForExit(within: 30)
        #expect(status == 0, "opq-coordinator did not exit cleanly on SIGTERM (status \(String(describing: status)))\n\(cluster.logs)")
        for group in groups {
            let deadline = Date().addingTimeInterval(10)
            while kill(-group, 0) == 0, Date() < deadline { _ = cluster.coordinator?.waitForExit(within: 0.02) }
            #expect(kill(-group, 0) != 0 && errno == ESRCH, "process group \(group) outlived the cluster")
        }
        let log = cluster.coordinator?.output ?? ""
        #expect(log.contains("said goodbye"), "the local workers said goodbye before the coordinator ended\n\(log)")
    }

    @Test func aSecondSignalHandsTheRunningCommandsBackAtOnce() throws {
        // A kill grace far longer than the test's deadline: only the second signal can end the drain in time.
        let cluster = try Self.start(workers: 1, slots: 1, ["--kill-grace", "120"])
        defer { cluster.stop() }
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        #expect(try Self.workerNames(client, count: 1, cluster: cluster) == ["local-1"], "\(cluster.logs)")
        let up = try Signal(cluster.path("up"))
        _ = try client.submit(Submission([OperationSpec(name: "long", work: .command(Command([
            "/bin/sh", "-c", "echo $$ > \"$0\"; exec sleep 600", up.path])))]))
        let group = up.wait(within: 30).flatMap { Int32($0) }
        #expect(group != nil, "the command did not start\n\(cluster.logs)")

        cluster.coordinator?.signal(SIGTERM)
        #expect(cluster.coordinator?.waitForOutput("taking no new work", within: 30) == true, "\(cluster.logs)")
        cluster.coordinator?.signal(SIGINT)
        let status = cluster.coordinator?.waitForExit(within: 30)
        #expect(status == 0, "opq-coordinator did not exit after the second signal (status \(String(describing: status)))\n\(cluster.logs)")
        if let group {
            #expect(kill(-group, 0) != 0 && errno == ESRCH, "the command's process group outlived the cluster")
        }
        #expect(cluster.coordinator?.output.contains("handing them back") == true, "\(cluster.logs)")
    }

    /// `inproc://` reaches only threads of one process: given by a user it would connect to nothing.
    @Test(arguments: [
        ["opq-coordinator", "--workers-endpoint", "inproc://mine"], ["opq-coordinator", "--clients-endpoint", "inproc://mine"],
        ["opq-worker", "--coordinator", "inproc://mine"],
    ])
    func anInprocEndpointGivenByAUserIsRefusedWithAClearError(_ command: [String]) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let run = try ChildProcess(command[0], Array(command.dropFirst()), name: "refused", logDirectory: cluster.directory)
        #expect(run.finish(within: 30) == 64)
        #expect(run.output.contains("inproc://"), "\(run.output)")
        #expect(run.output.contains("only reachable inside one process"), "\(run.output)")
    }

    @Test func localWorkersAreRefusedWithCurveKeys() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let keys = cluster.path("keys")
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        let run = try ChildProcess("opq-coordinator", [
            "--local-workers", "1", "--curve-key", keys + "/missing.secret", "--authorized-workers", keys,
            "--authorized-clients", keys, "--state", cluster.path("state"),
        ], name: "refused", logDirectory: cluster.directory)
        #expect(run.finish(within: 30) == 64)
        #expect(run.output.contains("--local-workers"), "\(run.output)")
        #expect(run.output.contains("CURVE"), "\(run.output)")
    }

    /// The numbers of the coordinator's "spinning before waits" line (logged at debug when it stops), after
    /// a graceful stop; nil when there is none (it never spins).
    static func spins(afterStopping cluster: TestCluster) throws -> (hits: Int, misses: Int)? {
        let coordinator = try #require(cluster.coordinator)
        coordinator.signal(SIGTERM)
        let status = coordinator.waitForExit(within: 30)
        #expect(status == 0, "the coordinator did not stop cleanly (status \(String(describing: status)))\n\(cluster.logs)")
        let log = try String(contentsOf: coordinator.logURL, encoding: .utf8)
        guard let line = log.split(separator: "\n").first(where: { $0.contains("spinning before waits") }) else { return nil }
        func number(_ key: String) -> Int? {
            line.firstMatch(of: try! Regex("\(key)=([0-9]+)"))?.output[1].substring.flatMap { Int($0) }
        }
        return try (#require(number("hits"), "\(line)"), #require(number("misses"), "\(line)"))
    }

    /// The local workers' messages travel on direct links, which wake no poll: the loop must read what a
    /// worker sent in its turn without waiting for a timer. A chain of handlers that run where they are
    /// started (each link's dispatch, start and finish in one worker turn) with 5-second heartbeats: if a
    /// message waited for the next timer, every link would take up to a second (the worker's own tick);
    /// read at once, the whole chain takes milliseconds. (A deadline on a stall, not a speed figure.)
    @Test func aChainOfInlineHandlersNeverWaitsForATimer() throws {
        let cluster = try Self.start(workers: 1, slots: 1, ["--heartbeat", "5", "--spin", "0"])
        defer { cluster.stop() }
        let coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        // A first operation, so the worker is registered and idle before the clock starts.
        let first = RemoteOperation(handler: "noop")
        try RemoteOperationQueue(name: "warm", coordinator: coordinator).addOperations([first], waitUntilFinished: false)
        #expect(first.waitUntilFinished(timeout: 60), "\(cluster.logs)")

        let links = (0..<20).map { _ in RemoteOperation(handler: "noop") }
        for (before, after) in zip(links, links.dropFirst()) { try after.addDependency(before) }
        let started = Date()
        try RemoteOperationQueue(name: "chain", coordinator: coordinator).addOperations(links, waitUntilFinished: false)
        #expect(links.last!.waitUntilFinished(timeout: 60), "the chain did not finish\n\(cluster.logs)")
        let took = Date().timeIntervalSince(started)
        #expect(links.allSatisfy { $0.outcome == .succeeded })
        #expect(took < 5, "20 links took \(took) s: messages on the direct links waited for a timer")
    }

    @Test func theLoopSpinsAfterDispatchingHandlersAndNeverForCommands() throws {
        // A chain of handlers that run on threads of their own (`sleep 0`): each link is dispatched and its
        // finish comes back from that thread within the spin. (A handler that runs where it is started, like
        // `noop`, has finished and been reported over the worker's direct link before the loop's next poll:
        // nothing to wait for, so nothing to spin for.)
        let handlers = try Self.start(workers: 1, slots: 1, ["--spin", "1000"])
        defer { handlers.stop() }
        do {
            let coordinator = try RemoteCoordinator(endpoint: handlers.clientsEndpoint, timeout: 20)
            defer { coordinator.close() }
            let links = (0..<100).map { _ in RemoteOperation(handler: "sleep", text: "0") }
            for (before, after) in zip(links, links.dropFirst()) { try after.addDependency(before) }
            try RemoteOperationQueue(name: "work", coordinator: coordinator).addOperations(links, waitUntilFinished: false)
            #expect(links.last!.waitUntilFinished(timeout: 60), "the chain did not finish\n\(handlers.logs)")
            #expect(links.allSatisfy { $0.outcome == .succeeded })
        }
        // Whether a spin finds the finish depends on how busy the machine's cores are; that the loop spins
        // after dispatching handlers does not.
        let spun = try #require(try Self.spins(afterStopping: handlers), "no spin logged\n\(handlers.logs)")
        #expect(spun.hits + spun.misses > 0, "\(spun)")

        // Commands only: a command's end is a process away, the coordinator never spins for it.
        let commands = try Self.start(workers: 1, slots: 1, ["--spin", "1000"])
        defer { commands.stop() }
        do {
            let coordinator = try RemoteCoordinator(endpoint: commands.clientsEndpoint, timeout: 20)
            defer { coordinator.close() }
            let operations = (0..<10).map { _ in RemoteOperation(command: ["/bin/true"]) }
            try RemoteOperationQueue(name: "work", coordinator: coordinator).addOperations(operations, waitUntilFinished: false)
            for operation in operations { #expect(operation.waitUntilFinished(timeout: 60), "\(commands.logs)") }
        }
        let none = try #require(try Self.spins(afterStopping: commands), "no spin logged\n\(commands.logs)")
        #expect(none.hits == 0 && none.misses == 0, "\(none)")

        // --spin 0: no spinning at all, nothing to log.
        let off = try Self.start(workers: 1, slots: 1, ["--spin", "0"])
        defer { off.stop() }
        do {
            let client = try CoordinatorConnection(endpoint: off.clientsEndpoint)
            #expect(try Self.workerNames(client, count: 1, cluster: off) == ["local-1"], "\(off.logs)")
        }
        #expect(try Self.spins(afterStopping: off) == nil)
    }

    @Test(arguments: [
        ("opq-coordinator", ["--local-workers", "1", "--spin", "1001"], "--spin: the spin must be from 0 to 1000 microseconds, not 1001"),
        ("opq-coordinator", ["--spin=-5"], "--spin: the spin must be from 0 to 1000 microseconds, not -5"),
        ("opq-worker", ["--spin", "99999999999999999"], "--spin: the spin must be from 0 to 1000 microseconds, not 99999999999999999"),
    ])
    func aSpinOutsideItsRangeIsRefused(program: String, arguments: [String], message: String) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let run = try ChildProcess(program, arguments + (program == "opq-coordinator" ? ["--state", cluster.path("state")] : []),
                                   name: "refused", logDirectory: cluster.directory)
        #expect(run.finish(within: 30) == 64)
        #expect(run.output.contains(message), "\(run.output)")
    }
}
