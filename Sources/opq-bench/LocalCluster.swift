import Foundation
import OPQClient
import OPQWire

/// The two executables the cluster benchmark starts.
struct Binaries {
    let directory: String
    var coordinator: String { directory + "/opq-coordinator" }
    var worker: String { directory + "/opq-worker" }

    /// `--bin-dir`, else the directory of this executable; fails with what to build when one is missing.
    static func locate(_ explicit: String?) throws -> Binaries {
        let directory: String
        if let explicit {
            directory = URL(fileURLWithPath: explicit).standardizedFileURL.path
        } else {
            let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            directory = URL(fileURLWithPath: me).resolvingSymlinksInPath().deletingLastPathComponent().path
        }
        let binaries = Binaries(directory: directory)
        for path in [binaries.coordinator, binaries.worker] where !FileManager.default.isExecutableFile(atPath: path) {
            throw ClusterBenchError("""
                \(path) is missing or not executable. Build the executables beside opq-bench \
                (swift build -c release: every product; one --product flag builds only that one), \
                or pass --bin-dir DIR where they are.
                """)
        }
        return binaries
    }
}

/// A private coordinator and its workers over `ipc://` endpoints in a directory of their own.
/// Every process is killed (SIGKILL) by ``stop()``, which `deinit` also calls.
final class LocalCluster {
    let directory: URL
    let workersEndpoint: String
    let clientsEndpoint: String
    private let binaries: Binaries
    private(set) var coordinator: ChildProcess?
    /// Workers in start order, named `w1`, `w2`, …
    private(set) var workers: [ChildProcess] = []
    /// `http://127.0.0.1:PORT` when the coordinator was started with `http`.
    private(set) var httpURL: String?

    /// Seconds allowed for a process to come up.
    static let startupDeadline = 15.0

    /// Makes `parent/name` for the sockets and logs.
    init(binaries: Binaries, parent: URL, name: String) throws {
        self.binaries = binaries
        directory = parent.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        workersEndpoint = "ipc://\(directory.path)/workers.sock"
        clientsEndpoint = "ipc://\(directory.path)/clients.sock"
    }

    /// Starts `opq-coordinator` (default heartbeat settings, warnings only, its journal in this cluster's
    /// directory at sync level `fsync`), with `extraArguments` added, and waits for its start line. With
    /// `http`, it also serves metrics and the dashboard on a free loopback port (``httpURL``).
    func startCoordinator(fsync: String = "normal", http: Bool = false, extraArguments: [String] = []) throws {
        let process = try ChildProcess(
            binaries.coordinator,
            ["--workers-endpoint", workersEndpoint, "--clients-endpoint", clientsEndpoint,
             "--state", directory.appendingPathComponent("state-\(fsync)").path, "--fsync", fsync, "--log-level", "warning"]
                + (http ? ["--http", "127.0.0.1:0"] : []) + extraArguments,
            name: "coordinator", directory: directory)
        coordinator = process
        let deadline = Clock.nanoseconds() + UInt64(LocalCluster.startupDeadline * 1e9)
        while !process.output.contains("opq-coordinator workers=") {
            guard process.isRunning else { throw ClusterBenchError("opq-coordinator exited at start\n\(process.tail())") }
            guard Clock.nanoseconds() < deadline else {
                throw ClusterBenchError("opq-coordinator did not print its start line within \(LocalCluster.startupDeadline) s\n\(process.tail())")
            }
            usleep(2_000)
        }
        httpURL = process.output.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("http=") }.map { String($0.dropFirst(5)) }
    }

    /// Starts `count` workers with `slots` slots each and waits until the coordinator lists them all.
    func startWorkers(_ count: Int, slots: Int, client: CoordinatorConnection) throws {
        for _ in 0..<count {
            let name = "w\(workers.count + 1)"
            workers.append(try ChildProcess(
                binaries.worker,
                ["--coordinator", workersEndpoint, "--name", name, "--slots", String(slots), "--log-level", "warning"],
                name: name, directory: directory))
        }
        let deadline = Clock.nanoseconds() + UInt64(LocalCluster.startupDeadline * 1e9)
        while true {
            let listed = try client.request { $0.listWorkers = Opq_V1_ListWorkers() }.reply.workers.workers
            if listed.count >= workers.count { return }
            if let dead = workers.first(where: { !$0.isRunning }) { throw ClusterBenchError("opq-worker \(dead.name) exited at start\n\(dead.tail())") }
            guard Clock.nanoseconds() < deadline else {
                throw ClusterBenchError("only \(listed.count) of \(workers.count) workers registered within \(LocalCluster.startupDeadline) s\n\(logs)")
            }
            usleep(5_000)
        }
    }

    /// A new client connection to the coordinator.
    func connect() throws -> CoordinatorConnection {
        do {
            return try CoordinatorConnection(endpoint: clientsEndpoint)
        } catch {
            throw ClusterBenchError("cannot open a client socket to \(clientsEndpoint): \(error)")
        }
    }

    /// The worker named `name`.
    func worker(_ name: String) -> ChildProcess? { workers.first { $0.name == name } }

    /// CPU seconds all workers have used so far; nil when one cannot be read.
    var workersCPUSeconds: Double? {
        var total = 0.0
        for worker in workers {
            guard let seconds = worker.cpuSeconds else { return nil }
            total += seconds
        }
        return total
    }

    /// The tail of every process's log, for error messages.
    var logs: String { ([coordinator].compactMap { $0 } + workers).map { $0.tail() }.joined(separator: "\n") }

    /// Kills every process (SIGKILL) and waits for them. Safe twice.
    func stop() {
        for worker in workers { worker.stop() }
        coordinator?.stop()
    }

    deinit { stop() }
}
