import Foundation
@_spi(Wire) import OPQClient
import OPQCore

/// Commands through the cluster: `true` run as child processes, so the figures are the worker's
/// per-command path (spawn, drain, reap, report: issue 19), which the no-op throughput never touches.
struct ClusterCommands: Codable {
    var operations: Int
    var slotsPerWorker: Int
    /// Submit sent → the Wait reply for the job.
    var seconds: Double
    var operationsPerSecond: Double
    /// CPU time per command during the timed run: all workers together, and the coordinator.
    var workersCPUMicrosecondsPerOperation: Double?
    var coordinatorCPUMicrosecondsPerOperation: Double?
    /// Threads of the first worker (`/proc/PID/task`) after the timed run, idle.
    var workerThreadsIdle: Int?
    /// Its threads while it runs ``busySlots`` commands (`sleep`) at once.
    var workerThreadsBusy: Int?
    var busySlots: Int
}

extension ClusterBenchmark {
    /// Slots per worker for the command run; the thread count is taken with this many commands running.
    static let commandSlots = 8

    /// `options.commandOperations` × `true` on the workers, timed; then the first worker's threads idle and
    /// with ``commandSlots`` `sleep` commands running.
    func commands(progress: (String) -> Void) throws -> ClusterCommands {
        let slots = Self.commandSlots
        progress("commands: \(options.workers) workers × \(slots) slots, \(Format.size(options.commandOperations)) × true")
        let cluster = try LocalCluster(binaries: binaries, parent: scratch, name: "commands")
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let client = try cluster.connect()
        try cluster.startWorkers(options.workers, slots: slots, client: client)
        func job(_ count: Int, _ argv: [String]) -> Submission {
            Submission((0..<count).map { _ in OperationSpec(name: "", work: .command(Command(argv)), dependencies: []) })
        }
        let warmUp = min(200, options.commandOperations)
        _ = try runJob(job(warmUp, ["true"]), count: warmUp, client: client, cluster: cluster)
        let before = ProcessCosts(cluster)
        let (seconds, _) = try runJob(job(options.commandOperations, ["true"]), count: options.commandOperations, client: client, cluster: cluster)
        let n = Double(options.commandOperations)
        let costs = before.perOperation(until: ProcessCosts(cluster), operations: n)
        var result = ClusterCommands(
            operations: options.commandOperations, slotsPerWorker: slots, seconds: seconds, operationsPerSecond: n / seconds,
            workersCPUMicrosecondsPerOperation: costs.workersCPU, coordinatorCPUMicrosecondsPerOperation: costs.coordinatorCPU,
            busySlots: slots)
        guard let worker = cluster.workers.first else { return result }
        result.workerThreadsIdle = Self.threads(of: worker.pid)
        // One worker's slots full of sleeping commands (the others get theirs too): count while they run.
        let busy = options.workers * slots
        let receipt = try client.submit(job(busy, ["sleep", "2"]), timeout: 60)
        let deadline = Clock.nanoseconds() + 10_000_000_000
        while Self.children(of: worker.pid) < slots && Clock.nanoseconds() < deadline { usleep(10_000) }
        if Self.children(of: worker.pid) >= slots { result.workerThreadsBusy = Self.threads(of: worker.pid) }
        _ = try client.wait(job: JobID(receipt.job), timeout: 60)
        return result
    }

    /// The threads of process `pid`, or nil if /proc cannot tell.
    static func threads(of pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.count
    }

    /// The children of process `pid` (of any of its threads).
    static func children(of pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { count, task in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            return count + text.split(separator: " ").count
        }
    }
}
