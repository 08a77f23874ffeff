import Foundation
import OPQSpawn

/// A child process of `opq` (coordinator or worker of an embedded cluster), in its own process group
/// so that the terminal's Ctrl-C reaches only `opq`, which then shuts the cluster down in order.
///
/// Started with SIGKILL as its parent-death signal (``ChildSpawn``), so it dies with `opq` even if `opq`
/// is killed outright. Output goes to a log file.
final class SpawnedProcess {
    let name: String
    let pid: pid_t
    let logPath: String
    private(set) var exitStatus: Int32?

    init(_ executable: String, _ arguments: [String], name: String, logPath: String) throws {
        self.name = name
        self.logPath = logPath
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard log >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(log) }
        // Started from opq's main thread, so the parent-death signal fires only when opq itself ends.
        switch ChildSpawn.spawn(executable, arguments: arguments, environment: ChildSpawn.environment(),
                                stdout: log, stderr: log, deathSignal: SIGKILL) {
        case .success(let child): pid = child
        case .failure(let failure): throw POSIXError(POSIXErrorCode(rawValue: failure.errno) ?? .EIO)
        }
    }

    /// True until the process has exited (and been reaped).
    var isRunning: Bool {
        guard exitStatus == nil else { return false }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == pid || (result < 0 && errno == ECHILD) {
            exitStatus = raw
            return false
        }
        return true
    }

    /// Sends `signal` to the process.
    func signal(_ signal: Int32) { if isRunning { Glibc.kill(pid, signal) } }

    /// Waits up to `seconds` for the process to exit; true if it did.
    @discardableResult
    func waitForExit(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning {
            guard Date() < deadline else { return false }
            usleep(20_000)
        }
        return true
    }

    /// Kills the whole process group and reaps the process.
    func kill() {
        guard isRunning else { return }
        Glibc.kill(-pid, SIGKILL)
        Glibc.kill(pid, SIGKILL)
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        exitStatus = raw
    }

    /// The last `count` lines of the process's log.
    func logTail(_ count: Int = 20) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(count).joined(separator: "\n")
    }
}
