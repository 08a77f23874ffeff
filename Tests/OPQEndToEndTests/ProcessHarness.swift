import Foundation
import OPQSpawn
import Testing

/// Locates the package's built executables (`opq-coordinator`, `opq-worker`) next to the test bundle.
enum BuiltProducts {
    static let directory: URL = {
        if let dir = ProcessInfo.processInfo.environment["OPQ_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        var candidate = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("opq-coordinator").path) {
                return candidate
            }
            candidate.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug")
    }()

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
}

/// A process a test started, in its own process group, output appended to a log file. It is killed
/// (SIGKILL to the whole group) when stopped or deinitialised, so no process outlives its test, also when
/// the test fails.
///
/// Spawned with ``ChildSpawn`` and reaped by one plain thread blocked in `waitpid`: no Foundation
/// `Process`, no Dispatch sources, so nothing else in the test process watches its descriptors.
final class ChildProcess: @unchecked Sendable {
    let name: String
    let logURL: URL
    let pid: pid_t
    private let exited = NSCondition()
    private var status: Int32?

    init(_ executable: String, _ arguments: [String], name: String, logDirectory: URL) throws {
        self.name = name
        logURL = logDirectory.appendingPathComponent("\(name).log")
        let log = open(logURL.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard log >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(log) }
        // A coordinator started without --state keeps its journal in the test's directory, never in the
        // user's state directory (which another test or a real coordinator may hold).
        let environment = ChildSpawn.environment(adding: ["XDG_STATE_HOME": logDirectory.appendingPathComponent("xdg-state").path])
        let child: pid_t
        // A built product by name, or any program by absolute path (e.g. /usr/sbin/ip).
        let path = executable.hasPrefix("/") ? executable : BuiltProducts.path(executable)
        switch ChildSpawn.spawn(path, arguments: arguments, environment: environment,
                                stdout: log, stderr: log) {
        case .success(let started): child = started
        case .failure(let failure): throw POSIXError(POSIXErrorCode(rawValue: failure.errno) ?? .EIO)
        }
        pid = child
        let reaper = Thread { [exited, child] in
            var raw: Int32 = 0
            while waitpid(child, &raw, 0) < 0 && errno == EINTR {}
            exited.lock()
            self.status = raw
            exited.broadcast()
            exited.unlock()
        }
        reaper.stackSize = 128 * 1024
        reaper.start()
    }

    var isRunning: Bool {
        exited.lock()
        defer { exited.unlock() }
        return status == nil
    }

    /// Sends `signal` to the process.
    func signal(_ signal: Int32) { if isRunning { kill(pid, signal) } }

    /// Kills the process group and waits for the process.
    func stop() {
        guard isRunning else { return }
        kill(-pid, SIGKILL)
        _ = waitForExit(within: 10)
    }

    /// Waits up to `seconds` for the process to exit; returns its wait status, or nil if it still runs.
    func waitForExit(within seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        exited.lock()
        defer { exited.unlock() }
        while status == nil, exited.wait(until: deadline) {}
        return status
    }

    /// The process's output so far (for failure messages).
    var output: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    deinit { stop() }
}

/// A private coordinator and workers over `ipc://` endpoints (or, with `tcp`, two free loopback TCP
/// ports) in a fresh temporary directory.
class TestCluster: @unchecked Sendable {
    let directory: URL
    let workersEndpoint: String
    let clientsEndpoint: String
    private(set) var coordinator: ChildProcess?
    private(set) var workers: [String: ChildProcess] = [:]

    init(tcp: Bool = false) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-e2e-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if tcp {
            workersEndpoint = "tcp://127.0.0.1:\(try freeLoopbackPort())"
            clientsEndpoint = "tcp://127.0.0.1:\(try freeLoopbackPort())"
        } else {
            workersEndpoint = "ipc://\(directory.path)/workers.sock"
            clientsEndpoint = "ipc://\(directory.path)/clients.sock"
        }
    }

    /// The coordinator's state directory (journal and lock): the same across restarts.
    var stateDirectory: String { directory.appendingPathComponent("state").path }

    /// Starts the coordinator with `arguments` added to its endpoints and state directory.
    func startCoordinator(_ arguments: [String] = []) throws {
        coordinator = try ChildProcess(
            "opq-coordinator",
            ["--workers-endpoint", workersEndpoint, "--clients-endpoint", clientsEndpoint, "--state", stateDirectory,
             "--log-level", "debug"] + arguments,
            name: "coordinator", logDirectory: directory)
    }

    /// Kills the coordinator with SIGKILL (it gets no chance to write or send anything more) and waits
    /// until it is gone; its state directory stays for a restart.
    func killCoordinator() { coordinator?.stop() }

    /// Starts a worker named `name`.
    @discardableResult
    func startWorker(_ name: String, slots: Int = 1, arguments: [String] = []) throws -> ChildProcess {
        let worker = try ChildProcess(
            "opq-worker",
            ["--coordinator", workersEndpoint, "--name", name, "--slots", String(slots), "--log-level", "debug"] + arguments,
            name: name, logDirectory: directory)
        workers[name] = worker
        return worker
    }

    /// A path inside the cluster's temporary directory.
    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Every process's output, for failure messages.
    var logs: String {
        ([coordinator].compactMap { $0 } + workers.values).map { "── \($0.name)\n\($0.output)" }.joined(separator: "\n")
    }

    /// Kills every process and removes the directory.
    func stop() {
        for worker in workers.values { worker.stop() }
        coordinator?.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
