import Foundation
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

/// A process a test started. It is killed (SIGKILL, whole process group) when stopped or deinitialised,
/// so no process outlives its test, also when the test fails.
final class ChildProcess: @unchecked Sendable {
    let name: String
    let process = Process()
    let logURL: URL

    init(_ executable: String, _ arguments: [String], name: String, logDirectory: URL) throws {
        self.name = name
        logURL = logDirectory.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.executableURL = URL(fileURLWithPath: BuiltProducts.path(executable))
        process.arguments = arguments
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// Sends `signal` to the process.
    func signal(_ signal: Int32) { if process.isRunning { kill(pid, signal) } }

    /// Kills the process and waits for it.
    func stop() {
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Waits up to `seconds` for the process to exit; returns its exit status, or nil if it is still running.
    func waitForExit(within seconds: Double) -> Int32? {
        let done = DispatchSemaphore(value: 0)
        let process = self.process
        DispatchQueue.global().async { process.waitUntilExit(); done.signal() }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return process.terminationStatus
    }

    /// The process's output so far (for failure messages).
    var output: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    deinit { stop() }
}

/// A private coordinator and workers over `ipc://` endpoints in a fresh temporary directory.
final class TestCluster: @unchecked Sendable {
    let directory: URL
    let workersEndpoint: String
    let clientsEndpoint: String
    private(set) var coordinator: ChildProcess?
    private(set) var workers: [String: ChildProcess] = [:]

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-e2e-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        workersEndpoint = "ipc://\(directory.path)/workers.sock"
        clientsEndpoint = "ipc://\(directory.path)/clients.sock"
    }

    /// Starts the coordinator with `arguments` added to its endpoints.
    func startCoordinator(_ arguments: [String] = []) throws {
        coordinator = try ChildProcess(
            "opq-coordinator",
            ["--workers-endpoint", workersEndpoint, "--clients-endpoint", clientsEndpoint, "--log-level", "debug"] + arguments,
            name: "coordinator", logDirectory: directory)
    }

    /// Starts a worker named `name`.
    func startWorker(_ name: String, slots: Int = 1, arguments: [String] = []) throws {
        workers[name] = try ChildProcess(
            "opq-worker",
            ["--coordinator", workersEndpoint, "--name", name, "--slots", String(slots), "--log-level", "debug"] + arguments,
            name: name, logDirectory: directory)
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
