import Foundation

/// A private `opq-coordinator` and its `opq-worker`s on fresh endpoints, each process logging to a file
/// in the cluster's directory: the one launcher behind `opq run`, `opq map --local`, `opq-bench` and the
/// end-to-end tests.
///
/// Endpoints are `ipc://` sockets in the cluster's directory, or two free loopback TCP ports
/// (``Endpoints``). Processes are started by ``startCoordinator(_:state:journaled:)`` and
/// ``startWorker(_:slots:arguments:)``; ``stop(grace:)`` ends them in order (workers first, so they can
/// report and say goodbye), ``kill()`` at once. Either removes the directory when the cluster made it.
///
/// ``startOneProcess(workers:slots:arguments:journaled:)`` starts the coordinator with its workers inside its own
/// process instead (`opq-coordinator --local-workers`, on direct links in memory): what `opq run` uses; more
/// workers may still be started as processes.
// @unchecked Sendable: its processes are ``ChildProcess``es (thread-safe); its own mutable fields (`coordinator`, `workers`, `stopped`) are set only by the thread that owns the cluster, which starts, stops and kills it (those calls must not race one another).
public final class LocalCluster: @unchecked Sendable {
    // @unchecked: a cluster is driven by one thread at a time (its owner).

    /// How the processes talk.
    public enum Endpoints: Sendable {
        /// `ipc://` sockets in the cluster's directory.
        case ipc
        /// Two free loopback TCP ports, chosen now (clients and workers may connect before the
        /// coordinator is up: ZeroMQ connects in the background).
        case loopbackTCP
    }

    /// The cluster's directory: sockets, logs, the journal.
    public let directory: String
    /// Where workers connect.
    public let workersEndpoint: String
    /// Where clients connect.
    public let clientsEndpoint: String
    /// Where `opq-coordinator` and `opq-worker` are.
    public let binaries: BinaryDirectory
    /// The `--log-level` of every process.
    public let logLevel: String
    /// Added to every process's environment.
    public let environment: [String: String]
    /// The coordinator, once started.
    public private(set) var coordinator: ChildProcess?
    /// The workers in start order.
    public private(set) var workers: [ChildProcess] = []
    /// The names of the workers inside the coordinator's process (``startOneProcess(workers:slots:arguments:journaled:)``).
    public private(set) var localWorkers: [String] = []
    private let deathSignal: Int32
    private let removesDirectory: Bool
    private var stopped = false

    /// Makes the cluster's directory and chooses its endpoints; starts nothing.
    ///
    /// - Parameters:
    ///   - directory: the directory to use (created if missing, kept at stop); nil = a fresh one under
    ///     the temporary directory named `prefix-XXXXXX`, removed at stop.
    ///   - environment: added to every process's environment.
    ///   - deathSignal: each process gets it when the thread starting it ends (`PR_SET_PDEATHSIG`); give
    ///     one only when starting from the main thread.
    public init(binaries: BinaryDirectory, directory: String? = nil, prefix: String = "opq-cluster",
                endpoints: Endpoints = .ipc, logLevel: String = "warning", environment: [String: String] = [:],
                deathSignal: Int32 = 0) throws {
        self.binaries = binaries
        self.logLevel = logLevel
        self.environment = environment
        self.deathSignal = deathSignal
        if let directory {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            self.directory = directory
            removesDirectory = false
        } else {
            self.directory = try Self.makeTemporaryDirectory(prefix: prefix)
            removesDirectory = true
        }
        switch endpoints {
        case .ipc:
            workersEndpoint = "ipc://\(self.directory)/workers.sock"
            clientsEndpoint = "ipc://\(self.directory)/clients.sock"
        case .loopbackTCP:
            workersEndpoint = "tcp://127.0.0.1:\(try FreePort.loopback())"
            clientsEndpoint = "tcp://127.0.0.1:\(try FreePort.loopback())"
        }
    }

    /// The coordinator's default state directory (journal and lock): the same across restarts.
    public var stateDirectory: String { directory + "/state" }

    /// A path inside the cluster's directory.
    public func path(_ name: String) -> String { directory + "/" + name }

    /// Starts `opq-coordinator` on the cluster's endpoints with its journal in `state` (default
    /// ``stateDirectory``), or with none at all (`journaled: false`: `--no-journal`, its state lives and
    /// dies with its process), `arguments` added; its output goes to `coordinator.log`.
    @discardableResult
    public func startCoordinator(_ arguments: [String] = [], state: String? = nil, journaled: Bool = true) throws -> ChildProcess {
        let process = try start(
            "opq-coordinator",
            ["--workers-endpoint", workersEndpoint, "--clients-endpoint", clientsEndpoint]
                + (journaled ? ["--state", state ?? stateDirectory] : ["--no-journal"])
                + ["--log-level", logLevel] + arguments,
            name: "coordinator")
        coordinator = process
        return process
    }

    /// Starts `opq-coordinator` as ``startCoordinator(_:state:journaled:)`` does, with `count` workers of `slots`
    /// slots each inside its process (`--local-workers`, named `local-1`, …): the one-process cluster.
    @discardableResult
    public func startOneProcess(workers count: Int, slots: Int, arguments: [String] = [], journaled: Bool = true) throws -> ChildProcess {
        let process = try startCoordinator(["--local-workers", String(count), "--local-slots", String(slots)] + arguments,
                                           journaled: journaled)
        localWorkers = (1...max(1, count)).map { "local-\($0)" }
        return process
    }

    /// Starts an `opq-worker` named `name` with `slots` slots, `arguments` added; its output goes to `NAME.log`.
    @discardableResult
    public func startWorker(_ name: String, slots: Int = 1, arguments: [String] = []) throws -> ChildProcess {
        let process = try start(
            "opq-worker",
            ["--coordinator", workersEndpoint, "--name", name, "--slots", String(slots), "--log-level", logLevel] + arguments,
            name: name)
        workers.append(process)
        return process
    }

    /// Starts `executable` (a name in ``binaries``, or an absolute path) with the cluster's environment,
    /// its output going to `NAME.log` in the cluster's directory; the cluster does not keep it.
    public func start(_ executable: String, _ arguments: [String], name: String) throws -> ChildProcess {
        let path = executable.hasPrefix("/") ? executable : binaries.path(of: executable)
        return try ChildProcess(path, arguments, name: name, environment: environment,
                                stdout: .file(self.path("\(name).log")), deathSignal: deathSignal)
    }

    /// The last worker started under `name`.
    public func worker(_ name: String) -> ChildProcess? { workers.last { $0.name == name } }

    /// Waits up to `seconds` for the coordinator's start line (`opq-coordinator workers=… clients=…`) and
    /// returns it.
    ///
    /// - Throws: ``LocalClusterError`` when it exits first or stays silent, with its log's tail.
    public func coordinatorStartLine(within seconds: Double) throws(LocalClusterError) -> String {
        guard let coordinator else { throw LocalClusterError("no coordinator was started") }
        let marker = "opq-coordinator workers="
        let deadline = Date().addingTimeInterval(seconds)
        while !coordinator.output.contains(marker) {
            guard coordinator.isRunning else { throw LocalClusterError("opq-coordinator exited at start\n\(coordinator.tail())") }
            guard Date() < deadline else {
                throw LocalClusterError("opq-coordinator did not print its start line within \(seconds) s\n\(coordinator.tail())")
            }
            _ = coordinator.waitForOutput(marker, within: min(0.2, max(0, deadline.timeIntervalSinceNow)))
        }
        return coordinator.output.split(separator: "\n").first { $0.hasPrefix(marker) }.map(String.init) ?? ""
    }

    /// The first process that has exited already (a crash at start, usually).
    public var exitedProcess: ChildProcess? { processes.first { !$0.isRunning } }

    /// Every process's whole output, each under its name, for failure messages.
    public var logs: String { processes.map { "── \($0.name)\n\($0.output)" }.joined(separator: "\n") }

    /// The coordinator, then the workers.
    public var processes: [ChildProcess] { [coordinator].compactMap { $0 } + workers }

    /// Stops the workers (SIGTERM, then SIGKILL for those still running after `grace` seconds), then the
    /// coordinator likewise — with workers inside it (``localWorkers``), which it stops first, it gets
    /// twice the grace — and removes the directory the cluster made. Safe to call twice.
    public func stop(grace: Double = 3) {
        guard !stopped else { return }
        stopped = true
        for worker in workers { worker.signal(SIGTERM) }
        let deadline = Date().addingTimeInterval(grace)
        for worker in workers { _ = worker.waitForExit(within: max(0, deadline.timeIntervalSinceNow)) }
        for worker in workers { worker.kill() }
        coordinator?.terminate(grace: localWorkers.isEmpty ? grace : 2 * grace)
        removeDirectory()
    }

    /// Kills every process at once (SIGKILL to each process group) and removes the directory the cluster
    /// made. Safe to call twice, and after ``stop(grace:)``.
    public func kill() {
        stopped = true
        for worker in workers { worker.kill() }
        coordinator?.kill()
        removeDirectory()
    }

    deinit { stop(grace: 1) }

    private func removeDirectory() {
        if removesDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    private static func makeTemporaryDirectory(prefix: String) throws -> String {
        let temporary = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
        var template = Array((temporary + prefix + "-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw LocalClusterError("cannot make a directory under \(temporary): \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }
}

/// Why a local cluster could not start: what failed, with the log of the process concerned.
public struct LocalClusterError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
