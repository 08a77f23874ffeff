import OPQSpawn
import Foundation
import OPQCore
#if canImport(Glibc)
import Glibc
#endif

/// An asynchronous `Operation` that runs one or more commands as child processes, each leading its own
/// process group (SEMANTICS §1, §5, §7).
///
/// - Several commands run concurrently (like `BlockOperation`'s execution blocks); the operation finishes
///   when all have, and succeeds only if all succeed. The first command to fail decides the report.
/// - Cancel (or timeout, or hand back) sends SIGTERM to every group, then SIGKILL after
///   `killGracePeriod` to any group with a member left; the attempt is reported `cancelled`
///   (`failed`/`timeout` for a timeout) once every group is reaped.
/// - Exit 0 → `succeeded`; a non-zero exit → `failed`/`exitStatus`; a signal opq did not send →
///   `failed`/`signal`; a program that cannot be started → `failed`/`error` with the reason in stderr.
/// - stdout and stderr keep their last 64 KiB (per command; joined in command order, then cut to 64 KiB).
///   With an ``outputWindow`` every byte is also streamed as ``AttemptEvent/output(_:_:)`` chunks as it is
///   read, before the `finished`; several commands' chunks interleave as they come (as on a shared
///   terminal), numbered by one offset per stream.
/// - The processes get the niceness of the operation's QoS (``OPQCore/QualityOfService/niceness``).
// @unchecked Sendable: restated as every `Operation` subclass must. `groups`, `results`, `failureOrder`,
// `remaining`, `stopping` and `streamed` are guarded by `lock`; `onSpawned`,
// `onReaped`, `leaseWatchdog`, `outputWindow` and `childMonitor` are set before the operation is queued and only read after.
public final class CommandOperation: AttemptOperation, @unchecked Sendable {
    /// The commands, run concurrently.
    public let commands: [Command]
    /// The niceness the processes start with.
    public let niceness: Int32
    /// Seconds between SIGTERM and SIGKILL.
    public let killGracePeriod: Double

    /// Told each process group id as it is spawned (tests use it to check that nothing outlives a kill).
    var onSpawned: (@Sendable (pid_t) -> Void)?
    /// Told each process group id once no member of it is left, which may be before its output is all
    /// read (tests use it to check that reaping never waits for the output window).
    var onReaped: (@Sendable (pid_t) -> Void)?
    /// Kills the process groups when the worker's lease ends (set by the runner before the operation runs):
    /// each group is listed with it from its spawn until it is reaped (``ChildProcessGroup``).
    var leaseWatchdog: LeaseWatchdog?
    /// Streams the output through this window when set (by the runner); nil = tails only.
    var outputWindow: OutputWindow?
    /// Drains and reaps the commands (set by the runner: its agent's, serviced by the socket thread);
    /// nil = ``ChildMonitor/shared``.
    var childMonitor: ChildMonitor?
    /// Bytes streamed so far per stream (the next chunk's offset); guarded by `lock`.
    private var streamed: [OutputChunk.Stream: UInt64] = [:]

    private let lock = NSLock()
    private var groups: [ChildProcessGroup] = []
    private var results: [AttemptResult?]
    private var failureOrder: [Int] = []
    private var remaining: Int
    private var stopping = false

    /// Creates an operation running `commands` for attempt `key`.
    public init(
        key: AttemptKey, commands: [Command], qualityOfService: OPQCore.QualityOfService = .default,
        timeout: Double? = nil, killGracePeriod: Double = RunRequest.defaultKillGracePeriod
    ) {
        self.commands = commands
        self.niceness = qualityOfService.niceness
        self.killGracePeriod = killGracePeriod
        self.results = Array(repeating: nil, count: commands.count)
        self.remaining = commands.count
        super.init(key: key, timeout: timeout)
    }

    override public func begin() {
        guard !commands.isEmpty else { return finish(AttemptResult(.succeeded)) }
        // Decided now, not at submission: upstream operations may just have made the inputs.
        if Self.isUpToDate(commands) { return finish(AttemptResult(AttemptReport(.succeeded, reason: .upToDate), message: "up to date")) }
        for (index, command) in commands.enumerated() {
            if lock.withLock({ stopping }) {
                record(index, .cancelled)
                continue
            }
            do throws(SystemError) {
                let output = outputWindow.map { window in
                    ChildProcessGroup.OutputSink(window: window) { [self] stream, bytes in self.stream(stream, bytes) }
                }
                let group = try ChildProcessGroup.spawn(command, niceness: niceness, killGracePeriod: killGracePeriod,
                                                        output: output, lease: leaseWatchdog, monitor: childMonitor,
                                                        onReaped: onReaped) {
                    [self] outcome in record(index, Self.result(of: outcome))
                }
                let stopNow = lock.withLock {
                    groups.append(group)
                    return stopping
                }
                onSpawned?(group.pid)
                if stopNow { group.terminate() }
            } catch {
                record(index, .error(Self.spawnFailureMessage(command, error)))
            }
        }
    }

    override public func stopRequested(_ cause: StopCause) {
        let live = lock.withLock {
            stopping = true
            return groups
        }
        for group in live { group.terminate() }
    }

    /// Posts one piece of output, its room in the window already taken (the thread servicing the child monitor; never waits).
    private func stream(_ stream: OutputChunk.Stream, _ bytes: UnsafeRawBufferPointer) {
        // Numbered and posted under the lock, so chunks reach the inbox in offset order.
        lock.withLock {
            let offset = streamed[stream, default: 0]
            streamed[stream] = offset + UInt64(bytes.count)
            sink?(.output(key, OutputChunk(stream, offset: offset, bytes: Array(bytes))))
        }
    }

    private func record(_ index: Int, _ result: AttemptResult) {
        let done: Bool = lock.withLock {
            results[index] = result
            if result.report.status == .failed { failureOrder.append(index) }
            remaining -= 1
            return remaining == 0
        }
        if done { finish(combined()) }
    }

    /// The operation's result: cancelled if any command was stopped by opq, else the first failure,
    /// else success; outputs joined in command order.
    private func combined() -> AttemptResult {
        let (results, failures) = lock.withLock { (self.results.map { $0! }, failureOrder) }
        var stdout = TailBuffer()
        var stderr = TailBuffer()
        for result in results {
            stdout.append(result.stdout)
            stderr.append(result.stderr)
        }
        var verdict: AttemptResult
        if let stopped = results.first(where: { $0.report.status == .cancelled }) {
            verdict = stopped
        } else if let first = failures.first {
            verdict = results[first]
            if results.count > 1, let message = verdict.message {
                verdict.message = "command \(first + 1) of \(results.count): \(message)"
            }
        } else {
            verdict = AttemptResult(.succeeded)
        }
        verdict.stdout = stdout.bytes
        verdict.stderr = stderr.bytes
        return verdict
    }

    static func result(of outcome: ChildProcessGroup.Outcome) -> AttemptResult {
        let stdout = outcome.stdout.bytes
        let stderr = outcome.stderr.bytes
        switch outcome.termination {
        case nil:
            return .error("lost track of the process (waitpid failed)", stdout: stdout, stderr: stderr)
        case .exited(let code)?:
            if outcome.killedByUs {
                return AttemptResult(AttemptReport(.cancelled, reason: .cancelRequested, exitCode: code),
                                     stdout: stdout, stderr: stderr, message: "cancelled")
            }
            let message = code == 0 ? nil : "exit status \(code)"
            return AttemptResult(.exited(code), stdout: stdout, stderr: stderr, message: message)
        case .signaled(let signal)?:
            let report = outcome.killedByUs
                ? AttemptReport(.cancelled, reason: .cancelRequested, signal: signal)
                : AttemptReport(.failed, reason: .signal, signal: signal)
            let message = outcome.killedByUs ? "cancelled" : "killed by signal \(signal) (\(signalName(signal)))"
            return AttemptResult(report, stdout: stdout, stderr: stderr, message: message)
        }
    }

    /// True when the commands name outputs, every output exists, and none is older than any input
    /// (make's rule; a missing input, or an input pattern matching nothing, means "run"). Relative
    /// paths are taken in the command's working directory; an input with `*`, `?` or `[` is a glob.
    static func isUpToDate(_ commands: [Command]) -> Bool {
        guard commands.contains(where: { !$0.outputs.isEmpty }) else { return false }
        func path(_ file: String, _ command: Command) -> String {
            file.hasPrefix("/") ? file : (command.workingDirectory ?? FileManager.default.currentDirectoryPath) + "/" + file
        }
        func modified(_ path: String) -> timespec? {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mtim : nil
        }
        func older(_ a: timespec, _ b: timespec) -> Bool { (a.tv_sec, a.tv_nsec) < (b.tv_sec, b.tv_nsec) }
        var oldestOutput: timespec?
        for command in commands {
            for output in command.outputs {
                guard let time = modified(path(output, command)) else { return false }
                if oldestOutput.map({ older(time, $0) }) ?? true { oldestOutput = time }
            }
        }
        guard let oldestOutput else { return false }
        for command in commands {
            for input in command.inputs {
                var paths = [path(input, command)]
                if input.contains(where: { "*?[".contains($0) }) {
                    var found = glob_t()
                    defer { globfree(&found) }
                    guard glob(paths[0], 0, nil, &found) == 0 else { return false }
                    paths = (0..<Int(found.gl_pathc)).compactMap { found.gl_pathv[$0].map { String(cString: $0) } }
                }
                for file in paths {
                    guard let time = modified(file), !older(oldestOutput, time) else { return false }
                }
            }
        }
        return true
    }

    static func spawnFailureMessage(_ command: Command, _ error: SystemError) -> String {
        let program = command.argv.first ?? ""
        if let directory = command.workingDirectory, [ENOENT, ENOTDIR, EACCES].contains(error.errno) {
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
                return "cannot run '\(program)': working directory '\(directory)' does not exist (\(error.call): \(error.errnoName))"
            }
        }
        return "cannot run '\(program)': \(error.message) (\(error.call): \(error.errnoName))"
    }

    static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1",
            SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
            SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ",
        ]
        return names[signal] ?? "signal \(signal)"
    }
}
