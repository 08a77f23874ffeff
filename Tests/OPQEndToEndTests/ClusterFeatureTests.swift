import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing

/// Suspension, barriers, timeouts, retries and placement, across real processes.
@Suite(.serialized) struct ClusterFeatureTests {
    @Test func aBarrierSeesEverythingBeforeItAndHoldsEverythingAfter() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1", slots: 4)
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let file = cluster.path("log")
        let receipt = try client.submit(Submission([
            OperationSpec(name: "a", work: Evidence.append("a", to: file, after: 0.2)),
            OperationSpec(name: "b", work: Evidence.append("b", to: file, after: 0.1)),
            OperationSpec(name: "manifest", work: .command(Command(["/bin/sh", "-c", "echo \"manifest $(wc -l < \"$0\")\" >> \"$0\"", file])),
                          isBarrier: true),
            OperationSpec(name: "c", work: Evidence.append("c", to: file), priority: .veryHigh),
        ]))
        _ = try client.finish(receipt.job, within: 60, cluster: cluster)
        let lines = Evidence.lines(file)
        #expect(Set(lines.prefix(2)) == ["a", "b"])
        #expect(lines.suffix(2) == ["manifest 2", "c"])
    }

    @Test func suspendHoldsNewWorkWhileRunningWorkContinues() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1", slots: 2)
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let started = try Signal(cluster.path("started"))
        let release = try Signal(cluster.path("release"))
        let file = cluster.path("log")
        let first = try client.submit(Submission([OperationSpec(name: "running", work: .command(Command(["/bin/sh", "-c",
            // Opens the release pipe read-write first (never blocks), so the test can write to it at once.
            "exec 3<>\"$1\"; echo up > \"$0\"; read line <&3; echo running >> \"$2\"", started.path, release.path, file])))]))
        #expect(started.wait(within: 30) == "up")
        try client.configure("default", QueueSettings(isSuspended: true))
        let held = try client.submit(Submission([OperationSpec(name: "held", work: Evidence.append("held", to: file))]))
        // Let the running command finish; the suspended queue must still hold "held".
        let writer = open(release.path, O_WRONLY | O_NONBLOCK)
        #expect(writer >= 0)
        _ = write(writer, "go\n", 3)
        close(writer)
        _ = try client.finish(first.job, within: 30, cluster: cluster)
        let info = try client.operation(OperationID(held.operations[0])).info
        #expect(info.state == .ready && Evidence.lines(file) == ["running"])
        try client.configure("default", QueueSettings(isSuspended: false))
        _ = try client.finish(held.job, within: 30, cluster: cluster)
        #expect(Evidence.lines(file) == ["running", "held"])
    }

    @Test func aCommandPastItsTimeoutIsKilledAndFails() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1", slots: 1)
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let receipt = try client.submit(Submission([
            OperationSpec(name: "slow", work: .command(Command(["sleep", "1000"])), timeout: 0.5),
        ]))
        let job = try client.finish(receipt.job, within: 30, cluster: cluster)
        #expect(job.counts.failed == 1)
        let info = try client.operation(OperationID(receipt.operations[0])).info
        #expect(info.outcome == .failed && info.reason == .timeout)
    }

    @Test func aFailingCommandIsRetriedUntilItSucceeds() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1", slots: 1)
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let file = cluster.path("attempts")
        // Fails on the first two attempts, succeeds on the third.
        let receipt = try client.submit(Submission([OperationSpec(name: "flaky", work: .command(Command(["/bin/sh", "-c",
            "echo try >> \"$0\"; test $(wc -l < \"$0\") -ge 3", file])), retries: 3)]))
        let job = try client.finish(receipt.job, within: 60, cluster: cluster)
        #expect(job.counts.succeeded == 1)
        let info = try client.operation(OperationID(receipt.operations[0])).info
        #expect(info.attempt == 3 && Evidence.lines(file).count == 3)
    }

    @Test func workersRestrictedToAQueueOrALabelTakeOnlyThatWork() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("render-gpu", slots: 2, arguments: ["--queues", "render", "--label", "gpu=1"])
        try cluster.startWorker("general", slots: 2, arguments: ["--queues", "default"])
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let stream = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        try stream.request { $0.watch.all = Opq_V1_All() }
        let receipt = try client.submit(Submission([
            OperationSpec(name: "gpu", queue: "render", work: .command(Command(["true"])), labels: ["gpu": "1"]),
            OperationSpec(name: "plain", work: .command(Command(["true"]))),
            OperationSpec(name: "render-any", queue: "render", work: .command(Command(["true"]))),
        ]))
        _ = try client.finish(receipt.job, within: 60, cluster: cluster)
        var ranOn: [UInt64: String] = [:]
        while ranOn.count < 3, let message = try stream.nextStreamMessage(timeout: 10) {
            guard case .events(let events) = message.body else { continue }
            for item in events.items where item.operation.state == .executing { ranOn[item.operation.operation] = item.operation.worker }
        }
        #expect(ranOn[receipt.operations[0]] == "render-gpu")
        #expect(ranOn[receipt.operations[1]] == "general", "the render worker does not serve the default queue")
        // The general worker serves only the default queue, so render work waits for the render worker.
        #expect(ranOn[receipt.operations[2]] == "render-gpu", "only the render worker serves the render queue")
    }
}
