import Foundation

/// Why the cluster benchmark could not go on: what failed, and what to do about it.
struct ClusterBenchError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}

/// A process the benchmark started (`opq-coordinator` or `opq-worker`), its output going to a log file.
/// It is killed with SIGKILL when stopped or deinitialised, and ``Reaper`` kills it if the benchmark
/// exits or dies first, so no process outlives the run.
final class ChildProcess {
    /// A short name for messages and the log file (`coordinator`, `w1`).
    let name: String
    let logPath: String
    private let process = Process()

    /// Starts `executable` with `arguments`; standard output and error go to `directory/name.log`.
    init(_ executable: String, _ arguments: [String], name: String, directory: URL) throws {
        self.name = name
        logPath = directory.appendingPathComponent("\(name).log").path
        guard FileManager.default.createFile(atPath: logPath, contents: nil),
              let log = FileHandle(forWritingAtPath: logPath) else {
            throw ClusterBenchError("cannot create the log file \(logPath)")
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw ClusterBenchError("cannot start \(executable): \(error)")
        }
        Reaper.add(process.processIdentifier)
    }

    /// The process id.
    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// Sends SIGKILL (no warning, as a crash or `kill -9` would) and returns at once.
    func killNow() {
        if process.isRunning { kill(pid, SIGKILL) }
    }

    /// Kills the process and waits for it.
    func stop() {
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
        Reaper.remove(pid)
    }

    /// CPU seconds (user + system) the process has used so far, from /proc/PID/stat; nil where unreadable.
    var cpuSeconds: Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)": state is field 3, utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The process's output so far.
    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The last `lines` lines of its output, indented, for error messages.
    func tail(_ lines: Int = 15) -> String {
        let all = output.split(separator: "\n", omittingEmptySubsequences: false)
        return "── \(name) (pid \(pid)), last lines of \(logPath):\n"
            + all.suffix(lines).map { "   " + $0 }.joined(separator: "\n")
    }

    deinit { stop() }
}

/// Kills every child still registered (SIGKILL) when the benchmark exits, is interrupted or crashes.
///
/// The pids live in a fixed C array so the signal handler reads them without locks or allocation
/// (the handler only calls `kill`, which is async-signal-safe). Registration happens on the main thread.
enum Reaper {
    private static let capacity = 256
    nonisolated(unsafe) private static let pids = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
    nonisolated(unsafe) private static var installed = false

    /// Registers `pid`; installs the handlers on first use.
    static func add(_ pid: Int32) {
        install()
        for slot in 0..<capacity where pids[slot] == 0 {
            pids[slot] = pid
            return
        }
        preconditionFailure("opq-bench: more than \(capacity) child processes at once")
    }

    /// Forgets `pid` (it has been killed and reaped).
    static func remove(_ pid: Int32) {
        for slot in 0..<capacity where pids[slot] == pid { pids[slot] = 0 }
    }

    /// SIGKILL to every registered child. Async-signal-safe.
    static func killAll() {
        for slot in 0..<capacity where pids[slot] > 0 { kill(pids[slot], SIGKILL) }
    }

    private static func install() {
        guard !installed else { return }
        installed = true
        pids.initialize(repeating: 0, count: capacity)
        atexit { Reaper.killAll() }
        for number in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE] {
            signal(number) { number in
                Reaper.killAll()
                signal(number, SIG_DFL)
                raise(number)
            }
        }
    }
}
