import Foundation
import OPQSpawn

/// A child process opq starts: a coordinator or worker of a local cluster, a benchmark's subject, a
/// test's executable. The one type for it outside the worker's own command runner.
///
/// Started with ``ChildSpawn`` in its own process group (the terminal's Ctrl-C reaches only us, and a
/// kill reaches everything it started), stdin from a file (default `/dev/null`) or a pipe we write
/// (``writeInput(_:)``, ``closeInput()``), stdout and stderr each
/// to a log file, `/dev/null`, a descriptor or a pipe this object reads (``Output``). One thread blocked in
/// `wait4` reaps it; a second reads a captured stdout. No Foundation `Process`, no Dispatch sources.
///
/// A child is killed (SIGKILL to its process group) by ``kill()`` or when released, so none outlives its
/// owner; ``killAll()`` kills every one still running (an interrupted benchmark). With a `deathSignal`
/// it also dies when the thread that started it ends (`PR_SET_PDEATHSIG`: start it from the main thread).
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: the mutable state lives in `state`, guarded by its condition.

    /// Where one of the child's output streams goes.
    public enum Output: Sendable {
        /// `/dev/null`.
        case null
        /// Appended to the file at this path (created if missing).
        case file(String)
        /// Read through a pipe into memory (``output``, ``outputBytes``).
        case capture
        /// An open descriptor of ours, which the caller keeps and closes.
        case descriptor(Int32)
    }

    /// A short name for messages and logs (`coordinator`, `w1`).
    public let name: String
    /// The process id, which is also its process group id.
    public let pid: pid_t
    /// The file stdout goes to (``Output/file(_:)``), nil otherwise.
    public let logPath: String?
    let state: ChildState
    private let captures: Bool

    /// Starts `executable` (a path; no PATH search) with `arguments`.
    ///
    /// - Parameters:
    ///   - environment: added to (or overriding) this process's environment.
    ///   - directory: the working directory (default ours).
    ///   - stdin: a file to read standard input from (default `/dev/null`).
    ///   - stdinPipe: read standard input from a pipe instead (`stdin` is then ignored): write to it with
    ///     ``writeInput(_:)``, end it with ``closeInput()`` (also done when the process is killed or released).
    ///   - stderr: where standard error goes; nil = wherever stdout goes.
    ///   - deathSignal: sent to the child when the calling thread ends; 0 for none.
    public init(
        _ executable: String, _ arguments: [String], name: String? = nil, environment: [String: String] = [:],
        directory: String? = nil, stdin: String? = nil, stdinPipe: Bool = false, stdout: Output = .null, stderr: Output? = nil,
        deathSignal: Int32 = 0
    ) throws(ChildProcessError) {
        let name = name ?? (executable as NSString).lastPathComponent
        self.name = name
        var opened: [Int32] = []
        defer { opened.forEach { close($0) } }
        func descriptor(_ output: Output) throws(ChildProcessError) -> (write: Int32, read: Int32?) {
            switch output {
            case .descriptor(let fd): return (fd, nil)
            case .null, .file:
                let path: String = if case .file(let path) = output { path } else { "/dev/null" }
                let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw ChildProcessError(name: name, step: "open \(path) for its output", errno: errno) }
                opened.append(fd)
                return (fd, nil)
            case .capture:
                var fds: [Int32] = [-1, -1]
                guard pipe(&fds) == 0 else { throw ChildProcessError(name: name, step: "make a pipe for its output", errno: errno) }
                for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                opened.append(fds[1])
                return (fds[1], fds[0])
            }
        }
        let out = try descriptor(stdout)
        var readers = [out.read].compactMap { $0 }
        let err: Int32
        if let stderr {
            let pair: (write: Int32, read: Int32?)
            do { pair = try descriptor(stderr) } catch { readers.forEach { close($0) }; throw error }
            err = pair.write
            readers += [pair.read].compactMap { $0 }
        } else {
            err = out.write
        }
        if case .file(let path) = stdout { logPath = path } else { logPath = nil }
        captures = !readers.isEmpty
        // A pipe's read end is opened by the child as its stdin through /dev/fd (the spawn opens stdin by
        // path before exec, while the descriptor is still open there); both ends close on exec.
        var input: (read: Int32, write: Int32)?
        if stdinPipe {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else {
                readers.forEach { close($0) }
                throw ChildProcessError(name: name, step: "make a pipe for its input", errno: errno)
            }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            input = (fds[0], fds[1])
            opened.append(fds[0])
            _ = Self.ignoreBrokenPipes
        }
        let result = ChildSpawn.spawn(executable, arguments: arguments, environment: ChildSpawn.environment(adding: environment),
                                      directory: directory, stdinPath: input.map { "/dev/fd/\($0.read)" } ?? stdin,
                                      stdout: out.write, stderr: err, deathSignal: deathSignal)
        switch result {
        case .success(let child): pid = child
        case .failure(let failure):
            readers.forEach { close($0) }
            if let input { close(input.write) }
            throw ChildProcessError(name: name, step: "start \(executable)", errno: failure.errno)
        }
        state = ChildState(readers: readers.count)
        if let input { state.input = input.write }
        ChildRegistry.add(pid)
        state.startReaper(pid)
        for reader in readers { state.startReader(reader) }
    }

    /// True until the process has exited (and been reaped).
    public var isRunning: Bool { state.withLock { state.status == nil } }

    /// Sends `signal` to the process (not its group) while it runs.
    public func signal(_ signal: Int32) { if isRunning { Glibc.kill(pid, signal) } }

    /// Writes `bytes` to the child's standard input pipe (``init`` with `stdinPipe`), blocking while the
    /// pipe is full; false when there is no pipe (closed, or not asked for) or the child no longer reads it.
    @discardableResult
    public func writeInput(_ bytes: [UInt8]) -> Bool {
        let fd = state.withLock { state.input }
        guard fd >= 0 else { return false }
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            done += written
        }
        return true
    }

    /// Closes the child's standard input pipe (it reads end of file). Safe to call twice.
    public func closeInput() {
        let fd = state.withLock {
            defer { state.input = -1 }
            return state.input
        }
        if fd >= 0 { close(fd) }
    }

    /// A write to a pipe whose reader exited fails with EPIPE instead of killing us (once per process).
    private static let ignoreBrokenPipes: Void = {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
        ChildSpawn.signalDispositionsChanged()
    }()

    /// Kills the process group (SIGKILL) and waits up to 10 s for the process. Safe to call twice.
    public func kill() {
        closeInput()
        guard isRunning else { return }
        Glibc.kill(-pid, SIGKILL)
        Glibc.kill(pid, SIGKILL)
        _ = waitForExit(within: 10)
    }

    /// Asks the process to stop (SIGTERM), waits up to `grace` seconds, then ``kill()``s it; true if it
    /// stopped by itself.
    @discardableResult
    public func terminate(grace: Double) -> Bool {
        signal(SIGTERM)
        let stopped = waitForExit(within: grace) != nil
        kill()
        return stopped
    }

    /// Waits up to `seconds` for the process to exit; its wait status, or nil if it still runs.
    public func waitForExit(within seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        return state.withLock {
            while state.status == nil, state.condition.wait(until: deadline) {}
            return state.status
        }
    }

    /// Waits for the process to exit, however long it takes; its wait status.
    public func waitForExit() -> Int32 {
        state.withLock {
            while state.status == nil { state.condition.wait() }
            return state.status!
        }
    }

    /// Waits up to `seconds` for the exit and for the end of its captured output; returns the exit code
    /// (128 + the signal's number when a signal ended it), or kills the process and returns nil.
    public func finish(within seconds: Double) -> Int32? {
        guard let raw = waitForExit(within: seconds) else {
            kill()
            return nil
        }
        // Everything it wrote before exiting is read before the caller looks at the output.
        let drained = Date().addingTimeInterval(5)
        state.withLock { while state.openReaders > 0, state.condition.wait(until: drained) {} }
        return Self.exitCode(raw)
    }

    /// The exit code of wait status `raw`: the code it exited with, or 128 + the signal that ended it.
    public static func exitCode(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }

    /// The process's peak resident set (`ru_maxrss`, KiB), once it has exited.
    public var peakResidentKilobytes: Int? { state.withLock { state.peakKilobytes } }

    /// CPU seconds (user + system) it has used so far, from `/proc/PID/stat`; nil where unreadable.
    public var cpuSeconds: Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)": state is field 3, utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// SIGKILL to the process group of every child still running (an interrupted benchmark's cleanup).
    public static func killAll() { ChildRegistry.killAll() }

    deinit { kill() }

    /// Whether stdout (or stderr) is read through a pipe.
    var isCapturing: Bool { captures }
}

/// Why a child process could not be started: which, at what step, and the system's reason.
public struct ChildProcessError: Error, CustomStringConvertible {
    /// The child's name.
    public let name: String
    /// What failed (`start /usr/bin/opq-worker`, `open LOG for its output`).
    public let step: String
    /// The `errno` of the failure.
    public let errno: Int32

    public var description: String {
        "cannot \(step) (\(name)): \(String(cString: strerror(errno)))"
            + (errno == ENOENT || errno == EACCES ? "; check the path exists and is executable" : "")
    }
}
