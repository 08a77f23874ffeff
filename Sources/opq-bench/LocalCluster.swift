import Foundation
@_spi(Wire) import OPQClient
import OPQWire
import OPQRuntime
import ZeroMQ

/// The two executables the cluster benchmark starts, found by the runtime's ``BinaryDirectory``.
struct Binaries {
    let found: BinaryDirectory
    var directory: String { found.path }

    /// `--bin-dir`, else the directory of this executable (then `$OPQ_BIN_DIR`, PATH); fails with what to
    /// build when one is missing.
    static func locate(_ explicit: String?) throws -> Binaries {
        do {
            return Binaries(found: try BinaryDirectory.locate(explicit: explicit))
        } catch {
            throw ClusterBenchError("""
                \(error). Build the executables beside opq-bench (swift build -c release: every product; one \
                --product flag builds only that one), or pass --bin-dir DIR where they are.
                """)
        }
    }
}

/// A private coordinator and its workers over `ipc://` endpoints in a directory of their own (or
/// loopback TCP, optionally with CURVE: ``Transport``): the runtime's launcher
/// (``OPQRuntime/LocalCluster``) with the benchmark's settings, keys and client. The workers are
/// `opq-worker` processes, or (``startCoordinator(fsync:http:localWorkers:extraArguments:)`` with
/// `localWorkers`) threads of the coordinator's process on direct links in memory: the one-process cluster of
/// `opq run`.
/// Every process is killed (SIGKILL) by ``stop()``, which `deinit` also calls; the directory stays
/// (the benchmark removes its scratch directory unless asked to keep the logs).
final class LocalCluster {
    /// How the processes talk.
    enum Transport: String, Codable, CustomStringConvertible {
        case ipc
        case tcp
        /// Loopback TCP with CURVE keys: encryption and key authentication on both sockets.
        case tcpCurve = "tcp+curve"

        var description: String { rawValue }
    }

    let directory: URL
    let transport: Transport
    /// The processes.
    private let cluster: OPQRuntime.LocalCluster
    /// With ``Transport/tcpCurve``: the coordinator's and the client's key pair (files in `keys/`; each
    /// worker gets its own pair when it starts: a key registers one name).
    private var keys: (coordinator: CurveKeyPair, client: CurveKeyPair)?
    /// `http://127.0.0.1:PORT` when the coordinator was started with `http`.
    private(set) var httpURL: String?

    var workersEndpoint: String { cluster.workersEndpoint }
    var clientsEndpoint: String { cluster.clientsEndpoint }
    var coordinator: ChildProcess? { cluster.coordinator }
    /// Workers in start order, named `w1`, `w2`, …
    var workers: [ChildProcess] { cluster.workers }
    /// The workers run inside the coordinator's process (its CPU and switches include theirs).
    var isOneProcess: Bool { !cluster.localWorkers.isEmpty }

    /// Seconds allowed for a process to come up: 15, or `$OPQ_BENCH_STARTUP_SECONDS` (a coordinator run
    /// under `valgrind --tool=callgrind` through a `--bin-dir` wrapper needs longer).
    static let startupDeadline = ProcessInfo.processInfo.environment["OPQ_BENCH_STARTUP_SECONDS"].flatMap(Double.init) ?? 15.0

    /// Makes `parent/name` for the sockets and logs.
    init(binaries: Binaries, parent: URL, name: String, transport: Transport = .ipc) throws {
        self.transport = transport
        directory = parent.appendingPathComponent(name)
        // Started from the benchmark's main thread: SIGKILL reaches every process if the benchmark dies.
        cluster = try OPQRuntime.LocalCluster(binaries: binaries.found, directory: directory.path,
                                              endpoints: transport == .ipc ? .ipc : .loopbackTCP, deathSignal: SIGKILL)
        if transport == .tcpCurve {
            let keyDirectory = directory.appendingPathComponent("keys").path
            for sub in ["", "/workers", "/clients"] {
                try FileManager.default.createDirectory(atPath: keyDirectory + sub, withIntermediateDirectories: true)
            }
            let coordinator = try CurveKeyPair.generate(), client = try CurveKeyPair.generate()
            try CurveKeys.write(coordinator, to: keyDirectory, name: "coordinator")
            try CurveKeys.write(client, to: keyDirectory + "/clients", name: "client")
            keys = (coordinator, client)
        }
    }

    /// The coordinator's CURVE options (none unless ``Transport/tcpCurve``).
    private var coordinatorCurveArguments: [String] {
        guard keys != nil else { return [] }
        let keyDirectory = directory.appendingPathComponent("keys").path
        return ["--curve-key", keyDirectory + "/coordinator.secret", "--authorized-workers", keyDirectory + "/workers",
                "--authorized-clients", keyDirectory + "/clients"]
    }

    /// The CURVE options of worker `name`, whose key pair is made and authorized here (none unless ``Transport/tcpCurve``).
    private func workerCurveArguments(_ name: String) throws -> [String] {
        guard keys != nil else { return [] }
        let keyDirectory = directory.appendingPathComponent("keys").path
        let pair = try CurveKeyPair.generate()
        let files = try CurveKeys.write(pair, to: keyDirectory, name: name)
        try CurveKeys.write(pair, to: keyDirectory + "/workers", name: name)
        return ["--server-key", keyDirectory + "/coordinator.public", "--curve-key", files.secretFile]
    }

    /// Starts `opq-coordinator` (default heartbeat settings, warnings only, its journal in this cluster's
    /// directory at sync level `fsync`), with `extraArguments` added, and waits for its start line. With
    /// `http`, it also serves metrics and the dashboard on a free loopback port (``httpURL``).
    /// With `localWorkers` (count, slots) it runs that many workers inside its process (`--local-workers`).
    func startCoordinator(fsync: String = "normal", http: Bool = false, localWorkers: (count: Int, slots: Int)? = nil,
                          extraArguments: [String] = []) throws {
        let arguments = ["--fsync", fsync] + (http ? ["--http", "127.0.0.1:0"] : []) + coordinatorCurveArguments + extraArguments
        let state = directory.appendingPathComponent("state-\(fsync)").path
        if let localWorkers {
            try cluster.startOneProcess(workers: localWorkers.count, slots: localWorkers.slots, arguments: arguments + ["--state", state])
        } else {
            try cluster.startCoordinator(arguments, state: state)
        }
        let line: String
        do {
            line = try cluster.coordinatorStartLine(within: LocalCluster.startupDeadline)
        } catch {
            throw ClusterBenchError(error.description)
        }
        httpURL = line.split(separator: " ").first { $0.hasPrefix("http=") }.map { String($0.dropFirst(5)) }
    }

    /// Starts `count` workers with `slots` slots each and waits until the coordinator lists them all.
    func startWorkers(_ count: Int, slots: Int, client: CoordinatorConnection) throws {
        let names = (0..<count).map { "w\(workers.count + 1 + $0)" }
        // CURVE: each worker's key is authorized before it starts (SIGHUP rereads the directory).
        let curveArguments = try names.map { try workerCurveArguments($0) }
        if transport == .tcpCurve, let coordinator {
            coordinator.signal(SIGHUP)
            // Usually reloaded by the time this round trip returns; a worker that comes earlier is refused
            // once and retries a second later (only startup is slower).
            _ = try client.request { $0.listWorkers = Opq_V1_ListWorkers() }
        }
        for (name, arguments) in zip(names, curveArguments) {
            try cluster.startWorker(name, slots: slots, arguments: arguments)
        }
        try waitForWorkers(client: client)
    }

    /// Waits until the coordinator lists every worker: the processes and those inside it.
    func waitForWorkers(client: CoordinatorConnection) throws {
        let expected = workers.count + cluster.localWorkers.count
        let deadline = Clock.nanoseconds() + UInt64(LocalCluster.startupDeadline * 1e9)
        while true {
            let listed = try client.request { $0.listWorkers = Opq_V1_ListWorkers() }.reply.workers.workers
            if listed.count >= expected { return }
            if let dead = cluster.processes.first(where: { !$0.isRunning }) { throw ClusterBenchError("\(dead.name) exited at start\n\(dead.tail())") }
            guard Clock.nanoseconds() < deadline else {
                throw ClusterBenchError("only \(listed.count) of \(expected) workers registered within \(LocalCluster.startupDeadline) s\n\(logs)")
            }
            usleep(5_000)
        }
    }

    /// A new client connection to the coordinator.
    func connect() throws -> CoordinatorConnection {
        do {
            let security: ConnectionSecurity = keys.map { .curve(serverKey: $0.coordinator.publicKey, clientKeys: $0.client) } ?? .none
            return try CoordinatorConnection(endpoint: clientsEndpoint, security: security)
        } catch {
            throw ClusterBenchError("cannot open a client socket to \(clientsEndpoint): \(error)")
        }
    }

    /// The worker named `name`.
    func worker(_ name: String) -> ChildProcess? { cluster.worker(name) }

    /// CPU seconds all workers have used so far; nil when one cannot be read, or when they run inside
    /// the coordinator's process (its figure then includes theirs).
    var workersCPUSeconds: Double? { isOneProcess ? nil : sumOverWorkers(\.cpuSeconds) }

    /// Context switches all workers' threads have made so far; nil as for ``workersCPUSeconds``.
    var workersContextSwitches: Int? { isOneProcess ? nil : sumOverWorkers(\.contextSwitches) }

    /// The sum of `reading` over every worker; nil when one cannot be read.
    private func sumOverWorkers<Value: AdditiveArithmetic>(_ reading: (ChildProcess) -> Value?) -> Value? {
        var total = Value.zero
        for worker in workers {
            guard let value = reading(worker) else { return nil }
            total += value
        }
        return total
    }

    /// The tail of every process's log, for error messages.
    var logs: String { cluster.processes.map { $0.tail() }.joined(separator: "\n") }

    /// Kills every process (SIGKILL) and waits for them. Safe twice.
    func stop() { cluster.kill() }

    deinit { stop() }
}

extension ChildProcess {
    /// Context switches (voluntary + involuntary) of the process's live threads so far, from
    /// `/proc/PID/task/*/status`; nil where unreadable. Each is a thread going to sleep or being
    /// preempted: a message between two processes costs several (socket thread ↔ ZeroMQ's I/O thread
    /// on each side), and on a shared machine they, not the code, bound a one-slot round trip.
    var contextSwitches: Int? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var total = 0
        for task in tasks {
            // A thread that ended meanwhile has no status left: its switches are not counted.
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
            for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                total += line.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
            }
        }
        return total
    }
}
