import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQSpawn
import Testing

/// SEMANTICS §7 with the real executables: a worker killed with SIGKILL leaves no process of its commands
/// running. Its lease watchdog (a process of its own) kills every process group still listed in the table
/// it shares with the worker — also a member the command's parent-death signal does not reach.
@Suite(.serialized) struct LeaseWatchdogEndToEndTests {
    @Test func aWorkerKilledWithSIGKILLLeavesNoMemberOfItsCommandsGroupsRunning() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(["--heartbeat", "0.5"])
        try cluster.startWorker("doomed", slots: 1, arguments: ["--heartbeat", "0.5"])
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let started = try Signal(cluster.path("started"))
        // A background member of the command's group (not its leader: the parent-death signal reaches only
        // the leader) tells its pid, and would run for 300 s.
        let script = "sleep 300 & echo $! > \"$1\"; wait"
        _ = try client.submit(Submission([OperationSpec(name: "held", work: .command(Command(["/bin/sh", "-c", script, "sh", started.path])))]))
        let member = try #require(started.wait(within: 30).flatMap { pid_t($0) }, "the command never started\n\(cluster.logs)")
        let exited = try ChildSpawn.exitDescriptor(of: member).get()
        defer { close(exited) }

        cluster.workers["doomed"]!.signal(SIGKILL)
        var item = pollfd(fd: exited, events: Int16(POLLIN), revents: 0)
        let ready = poll(&item, 1, 10_000)
        #expect(ready == 1, "the background member \(member) outlived its worker by 10 s\n\(cluster.logs)")
        if ready != 1 { kill(member, SIGKILL) }
    }
}
