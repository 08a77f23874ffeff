import Foundation
import OPQRuntime
import Testing

/// Locates the package's built executables (`opq-coordinator`, `opq-worker`) next to the test bundle,
/// the runtime's one way (``BinaryDirectory``: `$OPQ_BIN_DIR`, beside the test bundle, PATH, `.build/debug`).
enum BuiltProducts {
    static let binaries = (try? BinaryDirectory.locate()) ?? BinaryDirectory(FileManager.default.currentDirectoryPath + "/.build/debug")
    static var directory: URL { URL(fileURLWithPath: binaries.path) }

    static func path(_ name: String) -> String { binaries.path(of: name) }
}

/// A process a test started: the runtime's ``OPQRuntime/ChildProcess`` (its own process group, reaped by
/// one thread blocked in `wait4`), killed (SIGKILL to the whole group) when stopped or released, so no
/// process outlives its test, also when the test fails.
typealias ChildProcess = OPQRuntime.ChildProcess

extension ChildProcess {
    /// Starts `executable` (a built product by name, or any program by absolute path, e.g. /usr/sbin/ip),
    /// its output appended to `logDirectory/NAME.log`.
    convenience init(_ executable: String, _ arguments: [String], name: String, logDirectory: URL) throws {
        // A coordinator started without --state keeps its journal in the test's directory, never in the
        // user's state directory (which another test or a real coordinator may hold).
        let path = executable.hasPrefix("/") ? executable : BuiltProducts.path(executable)
        try self.init(path, arguments, name: name, environment: TestCluster.environment(logDirectory),
                      stdout: .file(logDirectory.appendingPathComponent("\(name).log").path))
    }

    /// Its log file.
    var logURL: URL { URL(fileURLWithPath: logPath ?? "/dev/null") }

    /// Kills the process group and waits for the process.
    func stop() { kill() }
}

/// A private coordinator and workers over `ipc://` endpoints (or, with `tcp`, two free loopback TCP
/// ports) in a fresh temporary directory: the runtime's launcher (``OPQRuntime/LocalCluster``) at log
/// level debug, each worker reachable by name.
class TestCluster: @unchecked Sendable {
    let cluster: LocalCluster
    let directory: URL

    init(tcp: Bool = false) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-e2e-\(UUID().uuidString.prefix(8))")
        cluster = try LocalCluster(binaries: BuiltProducts.binaries, directory: directory.path, endpoints: tcp ? .loopbackTCP : .ipc,
                                   logLevel: "debug", environment: Self.environment(directory))
    }

    /// What every process of a test gets in its environment: a state directory of the test's own.
    static func environment(_ directory: URL) -> [String: String] {
        ["XDG_STATE_HOME": directory.appendingPathComponent("xdg-state").path]
    }

    var workersEndpoint: String { cluster.workersEndpoint }
    var clientsEndpoint: String { cluster.clientsEndpoint }
    var coordinator: ChildProcess? { cluster.coordinator }
    /// The workers by name (the last one started under each name).
    var workers: [String: ChildProcess] { Dictionary(cluster.workers.map { ($0.name, $0) }) { $1 } }

    /// The coordinator's state directory (journal and lock): the same across restarts.
    var stateDirectory: String { cluster.stateDirectory }

    /// Starts the coordinator with `arguments` added to its endpoints and state directory (or, with
    /// `journaled: false`, `--no-journal`).
    func startCoordinator(_ arguments: [String] = [], journaled: Bool = true) throws {
        try cluster.startCoordinator(arguments, journaled: journaled)
    }

    /// Kills the coordinator with SIGKILL (it gets no chance to write or send anything more) and waits
    /// until it is gone; its state directory stays for a restart.
    func killCoordinator() { coordinator?.kill() }

    /// Starts a worker named `name`.
    @discardableResult
    func startWorker(_ name: String, slots: Int = 1, arguments: [String] = []) throws -> ChildProcess {
        try cluster.startWorker(name, slots: slots, arguments: arguments)
    }

    /// A path inside the cluster's temporary directory.
    func path(_ name: String) -> String { cluster.path(name) }

    /// Every process's output, for failure messages.
    var logs: String { cluster.logs }

    /// Kills every process and removes the directory.
    func stop() {
        cluster.kill()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
