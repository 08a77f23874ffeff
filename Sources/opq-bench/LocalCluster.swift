import Foundation
import OPQClient
import OPQWire
import ZeroMQ

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

/// A private coordinator and its workers over `ipc://` endpoints in a directory of their own (or
/// loopback TCP, optionally with CURVE: ``Transport``).
/// Every process is killed (SIGKILL) by ``stop()``, which `deinit` also calls.
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
    private(set) var workersEndpoint: String
    private(set) var clientsEndpoint: String
    let transport: Transport
    /// With ``Transport/tcpCurve``: the coordinator's and the client's key pair (files in `keys/`; each
    /// worker gets its own pair when it starts: a key registers one name).
    private var keys: (coordinator: CurveKeyPair, client: CurveKeyPair)?
    private let binaries: Binaries
    private(set) var coordinator: ChildProcess?
    /// Workers in start order, named `w1`, `w2`, …
    private(set) var workers: [ChildProcess] = []
    /// `http://127.0.0.1:PORT` when the coordinator was started with `http`.
    private(set) var httpURL: String?

    /// Seconds allowed for a process to come up.
    static let startupDeadline = 15.0

    /// Makes `parent/name` for the sockets and logs.
    init(binaries: Binaries, parent: URL, name: String, transport: Transport = .ipc) throws {
        self.binaries = binaries
        self.transport = transport
        directory = parent.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if transport == .ipc {
            workersEndpoint = "ipc://\(directory.path)/workers.sock"
            clientsEndpoint = "ipc://\(directory.path)/clients.sock"
        } else {
            // Free ports, read back from the coordinator's start line.
            workersEndpoint = "tcp://127.0.0.1:*"
            clientsEndpoint = "tcp://127.0.0.1:*"
        }
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
    func startCoordinator(fsync: String = "normal", http: Bool = false, extraArguments: [String] = []) throws {
        let process = try ChildProcess(
            binaries.coordinator,
            ["--workers-endpoint", workersEndpoint, "--clients-endpoint", clientsEndpoint,
             "--state", directory.appendingPathComponent("state-\(fsync)").path, "--fsync", fsync, "--log-level", "warning"]
                + (http ? ["--http", "127.0.0.1:0"] : []) + coordinatorCurveArguments + extraArguments,
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
        if transport != .ipc, let line = process.output.split(separator: "\n").first(where: { $0.hasPrefix("opq-coordinator workers=") }) {
            for field in line.split(separator: " ") {
                if field.hasPrefix("workers=") { workersEndpoint = String(field.dropFirst("workers=".count)) }
                if field.hasPrefix("clients=") { clientsEndpoint = String(field.dropFirst("clients=".count)) }
            }
        }
    }

    /// Starts `count` workers with `slots` slots each and waits until the coordinator lists them all.
    func startWorkers(_ count: Int, slots: Int, client: CoordinatorConnection) throws {
        let names = (0..<count).map { "w\(workers.count + 1 + $0)" }
        // CURVE: each worker's key is authorized before it starts (SIGHUP rereads the directory).
        let curveArguments = try names.map { try workerCurveArguments($0) }
        if transport == .tcpCurve, let coordinator {
            kill(coordinator.pid, SIGHUP)
            // Usually reloaded by the time this round trip returns; a worker that comes earlier is refused
            // once and retries a second later (only startup is slower).
            _ = try client.request { $0.listWorkers = Opq_V1_ListWorkers() }
        }
        for (name, arguments) in zip(names, curveArguments) {
            workers.append(try ChildProcess(
                binaries.worker,
                ["--coordinator", workersEndpoint, "--name", name, "--slots", String(slots), "--log-level", "warning"]
                    + arguments,
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
            let security: ConnectionSecurity = keys.map { .curve(serverKey: $0.coordinator.publicKey, clientKeys: $0.client) } ?? .none
            return try CoordinatorConnection(endpoint: clientsEndpoint, security: security)
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
