import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing

/// CPUs and memory across real processes (README "Resources"): workers announce their capacity with
/// `opq-worker --cpus/--memory`, operations go only where they fit, and one that fits nowhere says why.
@Suite(.serialized) struct ResourceTests {
    @Test func operationsGoOnlyToAWorkerWithRoomAndOneTooLargeForEveryWorkerSaysWhy() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("small", slots: 4, arguments: ["--cpus", "2", "--memory", "1G"])
        try cluster.startWorker("big", slots: 4, arguments: ["--cpus", "8", "--memory", "8G"])
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)

        // Both registrations carry their capacity.
        var workers: [Opq_V1_WorkerInfo] = []
        let deadline = Date().addingTimeInterval(60)
        while workers.count < 2, Date() < deadline {
            workers = try client.request { $0.listWorkers = Opq_V1_ListWorkers() }.reply.workers.workers
        }
        let byName = Dictionary(uniqueKeysWithValues: workers.map { ($0.name, $0) })
        #expect(byName["small"]?.cpus == 2 && byName["small"]?.memoryBytes == 1 << 30, "\(cluster.logs)")
        #expect(byName["big"]?.cpus == 8 && byName["big"]?.memoryBytes == 8 << 30)

        let log = cluster.path("intervals")
        func sized(_ name: String, cpus: Int = 1, memory: Int = 0) -> OperationSpec {
            var spec = OperationSpec(name: name, work: Evidence.interval(name, to: log, sleep: 0.3))
            spec.resources = Resources(cpus: cpus, memory: memory)
            return spec
        }
        let specs = [sized("large1", cpus: 4), sized("large2", cpus: 4), sized("large3", cpus: 4),
                     sized("memory", memory: 4 << 30), sized("small1"), sized("small2"), sized("small3")]
        let receipt = try client.submit(Submission(specs))
        let job = try client.finish(receipt.job, within: 120, cluster: cluster)
        #expect(job.counts.succeeded == 7)

        var ranOn: [String: String] = [:]
        var needs: [String: Int] = [:]
        for (spec, id) in zip(specs, receipt.operations) {
            let info = try client.operation(OperationID(id)).info
            ranOn[spec.name] = info.finishedBy
            needs[spec.name] = Int(info.cpus)
            #expect(info.cpus == UInt32(spec.resources.cpus) && info.memoryBytes == UInt64(spec.resources.memory))
        }
        for name in ["large1", "large2", "large3", "memory"] { #expect(ranOn[name] == "big", "\(name) fits only the big worker") }

        // At no moment did a worker's running operations need more CPUs than it offers.
        var events: [(time: Double, name: String, delta: Int)] = []
        for line in Evidence.lines(log) {
            let parts = line.split(separator: " ")
            guard parts.count == 3, let time = Double(parts[2]) else { continue }
            events.append((time, String(parts[1]), parts[0] == "start" ? 1 : -1))
        }
        #expect(events.count == 14)
        var used: [String: Int] = [:]
        for event in events.sorted(by: { ($0.time, $0.delta) < ($1.time, $1.delta) }) {
            let worker = ranOn[event.name]!
            used[worker, default: 0] += event.delta * needs[event.name]!
            #expect(used[worker]! <= (worker == "big" ? 8 : 2), "\(worker) over its cpus at \(event.name)")
        }

        // Larger than every worker: it waits, and says why.
        var huge = OperationSpec(name: "huge", work: .command(Command(["true"])))
        huge.resources = Resources(cpus: 16)
        let waiting = try client.submit(Submission([huge]))
        let info = try client.operation(OperationID(waiting.operations[0])).info
        #expect(info.state == .ready)
        #expect(info.blockers.map(\.text) == ["needs 16 cpus; the largest worker has 8 (it waits until a worker that large registers)"])
        #expect(info.blockers.map(\.kind) == [.tooLarge])
    }
}
