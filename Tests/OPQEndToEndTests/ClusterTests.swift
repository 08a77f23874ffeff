import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing

/// The real `opq-coordinator` and `opq-worker` executables over real ZeroMQ; what ran is observed
/// through the files the commands write.
@Suite(.serialized) struct ClusterTests {
    @Test func aBatchOnASuspendedQueueRunsInPriorityOrderAfterResume() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1", slots: 1)
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        try client.configure("default", QueueSettings(isSuspended: true))
        let file = cluster.path("order")
        let levels: [QueuePriority] = [.low, .veryHigh, .normal, .high, .veryLow]
        let receipt = try client.submit(Submission(levels.map {
            OperationSpec(name: "\($0)", work: Evidence.append("\($0)", to: file), priority: $0)
        }))
        try client.configure("default", QueueSettings(isSuspended: false))
        let job = try client.finish(receipt.job, within: 60, cluster: cluster)
        #expect(job.counts.succeeded == 5)
        #expect(Evidence.lines(file) == ["veryHigh", "high", "normal", "low", "veryLow"])
    }

    @Test func aRandomDAGOnThreeWorkersRunsInDependencyOrderWithinTheQueueMax() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        for k in 1...3 { try cluster.startWorker("w\(k)", slots: 2) }
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let file = cluster.path("intervals")
        var generator = SplitMix64(seed: 42)
        var specs: [OperationSpec] = []
        var dependencies: [String: [String]] = [:]
        for k in 0..<200 {
            let name = "op\(k)"
            let after = k == 0 ? [] : Array(Set((0..<Int(generator.next() % 4)).map { _ in "op\(Int(generator.next() % UInt64(k)))" }))
            dependencies[name] = after
            specs.append(OperationSpec(name: name, work: Evidence.interval(name, to: file, sleep: 0.01),
                                       dependencies: after.map { .name($0) }))
        }
        let receipt = try client.submit(Submission(specs, queueSettings: [("default", QueueSettings(maxConcurrent: 4))]))
        let job = try client.finish(receipt.job, within: 180, cluster: cluster)
        #expect(job.counts.succeeded == 200)

        var start: [String: Double] = [:]
        var end: [String: Double] = [:]
        var points: [(time: Double, delta: Int)] = []
        for line in Evidence.lines(file) {
            let parts = line.split(separator: " ")
            guard parts.count == 3, let time = Double(parts[2]) else { continue }
            if parts[0] == "start" {
                #expect(start[String(parts[1])] == nil, "\(parts[1]) started twice")
                start[String(parts[1])] = time
                points.append((time, 1))
            } else {
                end[String(parts[1])] = time
                points.append((time, -1))
            }
        }
        #expect(start.count == 200 && end.count == 200)
        for (name, after) in dependencies {
            for dependency in after {
                #expect(start[name]! >= end[dependency]!, "\(name) started before its dependency \(dependency) ended")
            }
        }
        var running = 0
        var peak = 0
        for point in points.sorted(by: { ($0.time, $0.delta) < ($1.time, $1.delta) }) {
            running += point.delta
            peak = max(peak, running)
        }
        #expect(peak <= 4, "observed \(peak) operations at once with maxConcurrent 4")
        #expect(peak >= 2, "work spread over the cluster")
    }

    @Test(arguments: [Requirement.any, .success])
    func cancellingARunningCommandKillsItsWholeGroupWithinASecond(requires: Requirement) throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1", slots: 2)
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let pids = cluster.path("pids")
        let started = try Signal(cluster.path("started"))
        let after = cluster.path("after")
        let receipt = try client.submit(Submission([
            OperationSpec(name: "victim", work: .command(Command(["/bin/sh", "-c",
                "echo $$ > \"$0\"; sleep 1000 & echo $! >> \"$0\"; echo up > \"$1\"; sleep 1000", pids, started.path]))),
            OperationSpec(name: "dependant", work: Evidence.append("dependant", to: after),
                          dependencies: [.name("victim")], requires: requires),
        ]))
        #expect(started.wait(within: 30) == "up", "the command did not start\n\(cluster.logs)")
        let group = Evidence.lines(pids).compactMap { Int32($0) }
        #expect(group.count == 2)
        let cancelledAt = Date()
        try client.request { $0.cancel.operation = receipt.operations[0] }
        let victim = try client.request(timeout: 15) {
            $0.wait.operation = receipt.operations[0]
            $0.wait.timeoutSeconds = 10
        }.reply.waited.operation
        let elapsed = Date().timeIntervalSince(cancelledAt)
        #expect(victim.outcome == .cancelled)
        #expect(elapsed < 1.0, "cancel took \(elapsed) s")
        for pid in group { #expect(kill(pid, 0) != 0, "process \(pid) of the group survived the cancel") }
        let job = try client.finish(receipt.job, within: 30, cluster: cluster)
        if requires == .any {
            #expect(job.counts.succeeded == 1 && Evidence.lines(after) == ["dependant"])
        } else {
            #expect(job.counts.cancelled == 2 && Evidence.lines(after).isEmpty)
        }
    }

    @Test func killingAWorkerMidJobRunsItsOperationsElsewhereAndLosesNone() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(["--heartbeat", "0.5"])
        try cluster.startWorker("doomed", slots: 2, arguments: ["--heartbeat", "0.5"])
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let file = cluster.path("done")
        let stream = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        try stream.request { $0.watch.all = Opq_V1_All() }
        let names = (1...12).map { "op\($0)" }
        let receipt = try client.submit(Submission(names.map {
            // Long enough that nothing on the doomed worker can complete between its start and the kill.
            OperationSpec(name: $0, work: Evidence.append($0, to: file, after: 1.0))
        }))
        // Wait for the doomed worker to be running something, then kill it without warning.
        var running = false
        while !running, let message = try stream.nextStreamMessage(timeout: 20) {
            if case .events(let events) = message.body {
                running = events.items.contains { $0.operation.state == .executing && $0.operation.worker == "doomed" }
            }
        }
        #expect(running, "the doomed worker never ran anything\n\(cluster.logs)")
        cluster.workers["doomed"]!.signal(SIGKILL)
        try cluster.startWorker("survivor", slots: 2, arguments: ["--heartbeat", "0.5"])
        let job = try client.finish(receipt.job, within: 90, cluster: cluster)
        #expect(job.counts.succeeded == 12, "none is lost")
        var finishes: [UInt64: Int] = [:]
        while let message = try stream.nextStreamMessage(timeout: 1) {
            if case .events(let events) = message.body {
                for item in events.items where item.operation.state == .finished { finishes[item.operation.operation, default: 0] += 1 }
            }
        }
        #expect(finishes.values.allSatisfy { $0 == 1 }, "each operation finishes exactly once")
        let lines = Evidence.lines(file)
        #expect(Set(lines) == Set(names), "every operation ran to completion")
        #expect(lines.count == names.count, "none ran to completion twice: \(lines.sorted())")
    }
}
