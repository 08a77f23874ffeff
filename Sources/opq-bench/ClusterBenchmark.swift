import Foundation
import Histogram
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire

/// One throughput run: a batch of independent no-op operations through the coordinator and workers.
struct ClusterThroughputRun: Codable {
    /// The coordinator's journal sync level (`--fsync`): "normal" (the default) or "always".
    var fsync: String
    /// How processes talk: ``LocalCluster/Transport`` ("ipc", "tcp" or "tcp+curve").
    var transport = LocalCluster.Transport.ipc.rawValue
    /// ``Topology``: "processes" or "one-process".
    var topology = Topology.processes.rawValue
    var slotsPerWorker: Int
    var operations: Int
    /// From sending the Submit to the Wait reply saying the job finished.
    var seconds: Double
    /// Of which until the Submit was acknowledged (client encode, transfer, validation, graph, first dispatches).
    var submitSeconds: Double
    var operationsPerSecond: Double
    /// CPU time per operation during the timed run: the coordinator's, and all workers' together.
    var coordinatorCPUMicrosecondsPerOperation: Double?
    var workersCPUMicrosecondsPerOperation: Double?
    /// Context switches per operation during the timed run (all threads): the coordinator's, all workers' together.
    var coordinatorContextSwitchesPerOperation: Double?
    var workersContextSwitchesPerOperation: Double?
}

/// Where the workers run: `opq-worker` processes, or threads of the coordinator's process over
/// direct links in memory (`opq-coordinator --local-workers`, what `opq run` and `opq map --local` start) — as it
/// starts by default (spinning before waits, `--spin`) and with `--spin 0`, for comparison.
enum Topology: String, Codable, CaseIterable {
    case processes
    case oneProcess = "one-process"
    case oneProcessNoSpin = "one-process-spin-0"
}

/// Dispatch latency, ready → executing, from the coordinator's own event timestamps.
struct ClusterLatency: Codable {
    /// ``Topology``.
    var topology = Topology.processes.rawValue
    var samples: Int
    var p50Microseconds: Double
    var p90Microseconds: Double
    var p99Microseconds: Double
    var maxMicroseconds: Double
    /// Client's view: Submit sent → the operation's `finished` event received, p50 and p99.
    var clientP50Microseconds: Double
    var clientP99Microseconds: Double
}

/// A chain across processes and the same chain on Foundation's `OperationQueue`.
struct ClusterChain: Codable {
    /// ``Topology``.
    var topology = Topology.processes.rawValue
    var operations: Int
    var seconds: Double
    var operationsPerSecond: Double
    /// What one link costs during the timed chain: CPU µs and context switches per operation, the
    /// coordinator's and all workers' together (one link is one round trip: finish → dispatch → start).
    var coordinatorCPUMicrosecondsPerOperation: Double?
    var workersCPUMicrosecondsPerOperation: Double?
    var coordinatorContextSwitchesPerOperation: Double?
    var workersContextSwitchesPerOperation: Double?
    var foundationSeconds: Double?
    var foundationOperationsPerSecond: Double?
    /// opq's rate over Foundation's.
    var ratio: Double?
}

/// From `kill -9` of a worker to the `ready` (lost worker) events of its operations.
struct ClusterFailover: Codable {
    var worker: String
    var operationsRequeued: Int
    /// Kill → the first and the last of those events received by the client.
    var firstSeconds: Double
    var seconds: Double
    var heartbeatSeconds: Double
    var liveness: Int
}

/// Runs the cluster measurements, each on a fresh coordinator and workers that are killed when it ends.
struct ClusterBenchmark {
    let options: ClusterOptions
    let binaries: Binaries
    /// The run's temporary directory; each measurement's cluster gets a subdirectory.
    let scratch: URL

    /// Slots per worker for the latency, chain and failover clusters.
    static let latencySlots = 8
    static let failoverSlots = 2
    /// The coordinator's defaults, which the failover measurement runs with.
    static let defaultHeartbeat = 1.0
    static let defaultLiveness = 3
    private static let noop = Work.handler(name: "noop", payload: [])

    /// Throughput at every slot count asked for (journal at the default sync level), then with
    /// `--fsync always` at the largest.
    func throughput(progress: (String) -> Void) throws -> [ClusterThroughputRun] {
        var runs = options.slotCounts.flatMap { slots in
            topologies.map { (slots: slots, fsync: "normal", transport: LocalCluster.Transport.ipc, topology: $0) }
        }
        if options.fsyncAlways, let largest = options.slotCounts.last { runs.append((largest, "always", .ipc, .processes)) }
        if options.curve, let largest = options.slotCounts.last {
            runs += [(largest, "normal", .tcp, .processes), (largest, "normal", .tcpCurve, .processes)]
        }
        let submission = Workload(.independent, size: options.throughputOperations).submission()
        let warmUp = Workload(.independent, size: min(2_000, options.throughputOperations)).submission()
        return try runs.map { slots, fsync, transport, topology in
            progress("throughput: \(options.workers) workers × \(slots) slots, \(Format.size(options.throughputOperations)) no-ops, --fsync \(fsync), \(transport.rawValue), \(topology.rawValue)")
            let cluster = try LocalCluster(binaries: binaries, parent: scratch, name: "throughput-\(slots)-\(fsync)-\(transport)-\(topology.rawValue)", transport: transport)
            defer { cluster.stop() }
            let client = try start(cluster, slots: slots, fsync: fsync, topology: topology)
            _ = try runJob(warmUp, count: warmUp.operations.count, client: client, cluster: cluster)
            let before = ProcessCosts(cluster)
            let (seconds, submitSeconds) = try runJob(submission, count: options.throughputOperations, client: client, cluster: cluster)
            let n = Double(options.throughputOperations)
            let costs = before.perOperation(until: ProcessCosts(cluster), operations: n)
            return ClusterThroughputRun(
                fsync: fsync, transport: transport.rawValue, topology: topology.rawValue, slotsPerWorker: slots, operations: options.throughputOperations, seconds: seconds,
                submitSeconds: submitSeconds, operationsPerSecond: n / seconds,
                coordinatorCPUMicrosecondsPerOperation: costs.coordinatorCPU, workersCPUMicrosecondsPerOperation: costs.workersCPU,
                coordinatorContextSwitchesPerOperation: costs.coordinatorSwitches, workersContextSwitchesPerOperation: costs.workersSwitches)
        }
    }

    /// The topologies measured: separate processes, and the one-process cluster unless `--no-one-process`
    /// (also with `--spin 0` unless `--no-spin-baseline`).
    var topologies: [Topology] {
        guard options.oneProcess else { return [.processes] }
        return options.spinBaseline ? [.processes, .oneProcess, .oneProcessNoSpin] : [.processes, .oneProcess]
    }

    /// Starts the coordinator and `options.workers` workers of `slots` slots each, as `opq-worker`
    /// processes or inside the coordinator's process (`topology`); returns a client connected to it
    /// once every worker is listed.
    func start(_ cluster: LocalCluster, slots: Int, fsync: String = "normal", topology: Topology) throws -> CoordinatorConnection {
        switch topology {
        case .processes:
            try cluster.startCoordinator(fsync: fsync)
            let client = try cluster.connect()
            try cluster.startWorkers(options.workers, slots: slots, client: client)
            return client
        case .oneProcess, .oneProcessNoSpin:
            try cluster.startCoordinator(fsync: fsync, localWorkers: (options.workers, slots),
                                         extraArguments: topology == .oneProcessNoSpin ? ["--spin", "0"] : [])
            let client = try cluster.connect()
            try cluster.waitForWorkers(client: client)
            return client
        }
    }

    /// Operations submitted one at a time to an idle cluster; ready → executing from the watch stream.
    func latency(topology: Topology = .processes, progress: (String) -> Void) throws -> ClusterLatency {
        progress("latency: \(options.latencyOperations) no-ops one at a time, \(options.workers) workers × \(Self.latencySlots) slots, \(topology.rawValue)")
        let cluster = try LocalCluster(binaries: binaries, parent: scratch, name: "latency-\(topology.rawValue)")
        defer { cluster.stop() }
        let client = try start(cluster, slots: Self.latencySlots, topology: topology)
        let stream = try cluster.connect()
        try stream.request { $0.watch.all = Opq_V1_All() }

        var coordinatorView = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        var clientView = coordinatorView
        let single = Submission([OperationSpec(work: Self.noop)])
        let warmUp = 50
        for k in 0..<(warmUp + options.latencyOperations) {
            let sent = Clock.nanoseconds()
            let receipt = try client.submit(single)
            let id = receipt.operations[0]
            var ready: Double?
            var executing: Double?
            var finished = false
            let deadline = Clock.nanoseconds() + 10_000_000_000
            while !finished {
                guard let events = try stream.nextOperationEvents(until: deadline) else {
                    throw ClusterBenchError("operation \(id) did not finish within 10 s\n\(cluster.logs)")
                }
                for event in events where event.operation == id {
                    switch event.state {
                    case .ready: ready = event.time
                    case .executing: executing = event.time
                    case .finished: finished = true
                    default: break
                    }
                }
            }
            let received = Clock.nanoseconds()
            guard k >= warmUp else { continue }
            guard let ready, let executing else {
                throw ClusterBenchError("operation \(id) finished without a ready and an executing event on the watch stream")
            }
            coordinatorView.record(UInt64(max(0, (executing - ready) * 1e9).rounded()))
            clientView.record(received - sent)
        }
        func microseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1_000 }
        return ClusterLatency(
            topology: topology.rawValue, samples: options.latencyOperations,
            p50Microseconds: microseconds(coordinatorView.valueAtPercentile(50)),
            p90Microseconds: microseconds(coordinatorView.valueAtPercentile(90)),
            p99Microseconds: microseconds(coordinatorView.valueAtPercentile(99)),
            maxMicroseconds: microseconds(coordinatorView.max),
            clientP50Microseconds: microseconds(clientView.valueAtPercentile(50)),
            clientP99Microseconds: microseconds(clientView.valueAtPercentile(99)))
    }

    /// A chain of no-ops across processes, then the same chain on Foundation's `OperationQueue`.
    /// With `topology` one-process, no Foundation run (the processes' chain has it).
    func chain(topology: Topology = .processes, progress: (String) -> Void) throws -> ClusterChain {
        let size = options.chainOperations
        progress("chain: \(Format.size(size)) dependent no-ops across \(options.workers) workers, \(topology.rawValue)")
        let workload = Workload(.chain, size: size)
        var result: ClusterChain
        do {
            let cluster = try LocalCluster(binaries: binaries, parent: scratch, name: "chain-\(topology.rawValue)")
            defer { cluster.stop() }
            let client = try start(cluster, slots: Self.latencySlots, topology: topology)
            let warmUp = Workload(.chain, size: min(200, size)).submission()
            _ = try runJob(warmUp, count: warmUp.operations.count, client: client, cluster: cluster)
            let before = ProcessCosts(cluster)
            let (seconds, _) = try runJob(workload.submission(), count: size, client: client, cluster: cluster)
            let costs = before.perOperation(until: ProcessCosts(cluster), operations: Double(size))
            result = ClusterChain(topology: topology.rawValue, operations: size, seconds: seconds, operationsPerSecond: Double(size) / seconds,
                                  coordinatorCPUMicrosecondsPerOperation: costs.coordinatorCPU, workersCPUMicrosecondsPerOperation: costs.workersCPU,
                                  coordinatorContextSwitchesPerOperation: costs.coordinatorSwitches,
                                  workersContextSwitchesPerOperation: costs.workersSwitches)
        }
        if options.foundation, topology == .processes {
            progress("chain: \(Format.size(size)) dependent BlockOperations on Foundation's OperationQueue")
            let seconds = FoundationBaseline.run(workload, maxConcurrent: options.workers * Self.latencySlots)
            result.foundationSeconds = seconds
            result.foundationOperationsPerSecond = Double(size) / seconds
            result.ratio = result.operationsPerSecond / (Double(size) / seconds)
        }
        return result
    }

    /// Both workers busy with long sleeps; `kill -9` one and time until its operations are `ready` again.
    func failover(progress: (String) -> Void) throws -> ClusterFailover {
        progress("failover: kill -9 of a busy worker (heartbeat \(Self.defaultHeartbeat) s × \(Self.defaultLiveness))")
        let cluster = try LocalCluster(binaries: binaries, parent: scratch, name: "failover")
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try cluster.connect()
        try cluster.startWorkers(options.workers, slots: Self.failoverSlots, client: client)
        let stream = try cluster.connect()
        try stream.request { $0.watch.all = Opq_V1_All() }

        let count = options.workers * Self.failoverSlots
        let sleeper = OperationSpec(work: .handler(name: "sleep", payload: Array("60".utf8)))
        let receipt = try client.submit(Submission(Array(repeating: sleeper, count: count)))
        var heldBy: [UInt64: String] = [:]
        let busyDeadline = Clock.nanoseconds() + 15_000_000_000
        while heldBy.count < count {
            guard let events = try stream.nextOperationEvents(until: busyDeadline) else {
                throw ClusterBenchError("only \(heldBy.count) of \(count) sleep operations started within 15 s\n\(cluster.logs)")
            }
            for event in events where event.state == .executing { heldBy[event.operation] = event.worker }
        }
        guard let victim = cluster.workers.first else { throw ClusterBenchError("no worker to kill") }
        let victims = Set(heldBy.filter { $0.value == victim.name }.keys)
        guard !victims.isEmpty else { throw ClusterBenchError("worker \(victim.name) holds none of the sleep operations: \(heldBy)") }

        let killed = Clock.nanoseconds()
        victim.killNow()
        var requeued: [UInt64: UInt64] = [:]
        let deadline = killed + 30_000_000_000
        while requeued.count < victims.count {
            guard let events = try stream.nextOperationEvents(until: deadline) else {
                throw ClusterBenchError("\(victims.count - requeued.count) operations of the killed worker were not requeued within 30 s\n\(cluster.logs)")
            }
            let received = Clock.nanoseconds()
            for event in events where victims.contains(event.operation) && event.state == .ready && event.reason == .lostWorker {
                if requeued[event.operation] == nil { requeued[event.operation] = received }
            }
        }
        _ = try? client.request { $0.cancel.job = receipt.job }
        return ClusterFailover(worker: victim.name, operationsRequeued: victims.count,
                               firstSeconds: Clock.seconds(requeued.values.min()! - killed),
                               seconds: Clock.seconds(requeued.values.max()! - killed),
                               heartbeatSeconds: Self.defaultHeartbeat, liveness: Self.defaultLiveness)
    }

    /// Submits `submission` as one job and waits for it; returns seconds to the Wait reply and to the Submit's.
    func runJob(_ submission: Submission, count: Int, client: CoordinatorConnection,
                        cluster: LocalCluster) throws -> (seconds: Double, submitSeconds: Double) {
        let timeout = max(60, Double(count) / 1_000)
        let start = Clock.nanoseconds()
        let receipt = try client.submit(submission, timeout: timeout)
        let submitted = Clock.nanoseconds()
        let result = try client.wait(job: JobID(receipt.job), timeout: timeout)
        let end = Clock.nanoseconds()
        guard !result.timedOut else {
            throw ClusterBenchError("job \(receipt.job) (\(count) operations) did not finish within \(Format.fixed(timeout, 0)) s\n\(cluster.logs)")
        }
        guard result.job.counts.succeeded == UInt64(count) else {
            throw ClusterBenchError("job \(receipt.job): \(result.job.counts.succeeded) of \(count) operations succeeded "
                                    + "(failed \(result.job.counts.failed), cancelled \(result.job.counts.cancelled))\n\(cluster.logs)")
        }
        return (Clock.seconds(end - start), Clock.seconds(submitted - start))
    }
}

extension CoordinatorConnection {
    /// The operation events of the next `Events` message on a watch stream (other messages are skipped),
    /// or nil when none came before `deadline` (monotonic nanoseconds).
    func nextOperationEvents(until deadline: UInt64) throws -> [Opq_V1_OperationEvent]? {
        while true {
            let now = Clock.nanoseconds()
            guard now < deadline else { return nil }
            guard let message = try nextStreamMessage(timeout: Clock.seconds(deadline - now)) else { return nil }
            guard case .events(let events) = message.body else { continue }
            return events.items.compactMap { item in
                if case .operation(let event) = item.kind { event } else { nil }
            }
        }
    }
}

/// The coordinator's and the workers' CPU seconds and context switches at one moment; two readings
/// around a timed run give its cost per operation (nil where a process could not be read).
struct ProcessCosts {
    var coordinatorCPU: Double?
    var workersCPU: Double?
    var coordinatorSwitches: Int?
    var workersSwitches: Int?

    init(_ cluster: LocalCluster) {
        coordinatorCPU = cluster.coordinator?.cpuSeconds
        workersCPU = cluster.workersCPUSeconds
        coordinatorSwitches = cluster.coordinator?.contextSwitches
        workersSwitches = cluster.workersContextSwitches
    }

    /// Per operation from this reading to `end`: CPU in µs, switches as counts.
    func perOperation(until end: ProcessCosts, operations n: Double) -> (coordinatorCPU: Double?, workersCPU: Double?,
                                                                         coordinatorSwitches: Double?, workersSwitches: Double?) {
        func per(_ before: Double?, _ after: Double?, scale: Double) -> Double? {
            guard let before, let after else { return nil }
            return (after - before) * scale / n
        }
        return (per(coordinatorCPU, end.coordinatorCPU, scale: 1e6), per(workersCPU, end.workersCPU, scale: 1e6),
                per(coordinatorSwitches.map(Double.init), end.coordinatorSwitches.map(Double.init), scale: 1),
                per(workersSwitches.map(Double.init), end.workersSwitches.map(Double.init), scale: 1))
    }
}
