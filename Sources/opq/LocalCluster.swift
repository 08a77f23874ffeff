import Foundation
import OPQClient

/// The embedded one-machine cluster of `opq run`: a private `opq-coordinator` and N `opq-worker`
/// processes on `ipc://` endpoints in a fresh temporary directory, which ``stop()`` removes.
final class LocalCluster {
    /// The private directory holding the sockets and the processes' logs.
    let directory: String
    /// Where `opq` connects.
    let clientsEndpoint: String
    /// Where the workers connect.
    let workersEndpoint: String
    private(set) var coordinator: SpawnedProcess?
    private(set) var workers: [SpawnedProcess] = []
    private var stopped = false

    /// Seconds between SIGTERM and SIGKILL for cancelled commands in the embedded cluster.
    static let killGrace = 2

    /// Starts the coordinator and `workerCount` workers of `slots` slots each.
    init(workers workerCount: Int, slots: Int) throws {
        let temporary = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
        var template = Array((temporary + "opq-run-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        directory = String(cString: made)
        clientsEndpoint = "ipc://\(directory)/clients.sock"
        workersEndpoint = "ipc://\(directory)/workers.sock"
        do {
            let binaries = try Self.binaryDirectory()
            coordinator = try SpawnedProcess(
                binaries + "/opq-coordinator",
                ["--workers-endpoint", workersEndpoint, "--clients-endpoint", clientsEndpoint, "--state", directory + "/state",
                 "--kill-grace", String(Self.killGrace), "--log-level", "warning"],
                name: "opq-coordinator", logPath: directory + "/coordinator.log")
            for k in 1...max(1, workerCount) {
                workers.append(try SpawnedProcess(
                    binaries + "/opq-worker",
                    ["--coordinator", workersEndpoint, "--slots", String(slots), "--name", "local-\(k)",
                     "--kill-grace", String(Self.killGrace), "--log-level", "warning"],
                    name: "opq-worker local-\(k)", logPath: directory + "/worker-\(k).log"))
            }
        } catch {
            stop()
            throw error
        }
    }

    /// The directory holding `opq-coordinator` and `opq-worker`: next to `opq` itself, else on PATH.
    static func binaryDirectory() throws -> String {
        let fileManager = FileManager.default
        var candidates: [String] = []
        if let env = ProcessInfo.processInfo.environment["OPQ_BIN_DIR"] { candidates.append(env) }
        if let exe = try? fileManager.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((exe as NSString).deletingLastPathComponent)
        }
        candidates += (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for directory in candidates
        where fileManager.isExecutableFile(atPath: directory + "/opq-coordinator")
            && fileManager.isExecutableFile(atPath: directory + "/opq-worker") {
            return directory
        }
        throw LocalClusterError.binariesNotFound
    }

    /// Any process that has exited already (a crash at start, usually), with its log.
    var exitedProcess: SpawnedProcess? {
        ([coordinator].compactMap { $0 } + workers).first { !$0.isRunning }
    }

    /// Stops the workers, then the coordinator (SIGTERM, then SIGKILL after `grace` seconds), and
    /// removes the directory. Safe to call twice.
    func stop(grace: Double = 3) {
        guard !stopped else { return }
        stopped = true
        for worker in workers { worker.signal(SIGTERM) }
        let deadline = Date().addingTimeInterval(grace)
        for worker in workers where !worker.waitForExit(within: max(0, deadline.timeIntervalSinceNow)) { worker.kill() }
        for worker in workers { worker.kill() }
        if let coordinator {
            coordinator.signal(SIGTERM)
            if !coordinator.waitForExit(within: grace) { coordinator.kill() }
            coordinator.kill()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Kills everything at once and removes the directory.
    func kill() {
        for process in workers + [coordinator].compactMap({ $0 }) { process.kill() }
        stopped = true
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop(grace: 1) }
}

extension LocalCluster {
    /// Starts a cluster and connects to it. A failure is printed (with the log of a process that
    /// exited) and becomes exit status 3; the caller stops the cluster it gets.
    static func startConnected(workers: Int, slots: Int) throws(ExitStatus) -> (LocalCluster, CoordinatorConnection) {
        let cluster: LocalCluster
        do {
            cluster = try LocalCluster(workers: workers, slots: slots)
        } catch {
            throw fail(.unreachable, "cannot start the local cluster: \(error)")
        }
        do {
            return (cluster, try Connection.open(cluster.clientsEndpoint, probeTimeout: 10, security: ConnectionSecurity.none))
        } catch {
            if let exited = cluster.exitedProcess { printError("\(exited.name) exited:\n\(exited.logTail())") }
            cluster.stop()
            throw error
        }
    }
}

enum LocalClusterError: Error, CustomStringConvertible {
    case binariesNotFound

    var description: String {
        "cannot find opq-coordinator and opq-worker next to opq or on PATH (set OPQ_BIN_DIR to their directory)"
    }
}
