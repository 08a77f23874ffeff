import Foundation
import OPQSpawn
import Testing

/// The package's built executables (`opq`, `opq-coordinator`, `opq-worker`), found next to the test bundle.
enum Executables {
    static let directory: URL = {
        if let dir = ProcessInfo.processInfo.environment["OPQ_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        var candidate = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("opq").path) { return candidate }
            candidate.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug")
    }()

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The repository root (for `examples/`).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}

/// A private temporary directory, removed by ``remove()``.
struct Scratch {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("opq-cli-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func write(_ name: String, _ text: String) throws -> String {
        try text.write(toFile: path(name), atomically: true, encoding: .utf8)
        return path(name)
    }
    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// One run of a built executable: stdout read through a pipe, stderr to a file; killed (SIGKILL) if it
/// outlives its deadline or the test.
///
/// Spawned with ``ChildSpawn`` (its own process group); one thread reads stdout and one waits for the exit, each signalling a
/// condition, so the test waits on the events themselves (with deadlines), never by sleeping.
final class Run: @unchecked Sendable {
    let pid: pid_t
    let stderrPath: String
    private let changed = NSCondition()
    private var output: [UInt8] = []
    private var outputEnded = false
    private var status: Int32?
    private var peakKilobytes: Int?

    /// Starts `executable` (a built product by name, or a path) with `arguments`; standard input comes from the file `input` (default /dev/null).
    init(_ executable: String, _ arguments: [String], in scratch: Scratch, environment: [String: String] = [:],
         input: String = "/dev/null") throws {
        stderrPath = scratch.path("\((executable as NSString).lastPathComponent)-\(UUID().uuidString.prefix(6)).err")
        let errors = open(stderrPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard errors >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(errors) }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let path = executable.contains("/") ? executable : Executables.path(executable)
        // A coordinator started without --state keeps its journal in the scratch directory, never in the
        // user's state directory (which another test or a real coordinator may hold).
        let added = ["XDG_STATE_HOME": scratch.path("xdg-state")].merging(environment) { $1 }
        let result = ChildSpawn.spawn(path, arguments: arguments, environment: ChildSpawn.environment(adding: added),
                                      stdinPath: input, stdout: fds[1], stderr: errors)
        close(fds[1])
        let child: pid_t
        switch result {
        case .success(let started): child = started
        case .failure(let failure):
            close(fds[0])
            throw POSIXError(POSIXErrorCode(rawValue: failure.errno) ?? .EIO)
        }
        pid = child
        let spawned = child
        let reader = fds[0]
        Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(reader, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                changed.withLock {
                    output += buffer[..<count]
                    changed.broadcast()
                }
            }
            close(reader)
            changed.withLock {
                outputEnded = true
                changed.broadcast()
            }
        }.start()
        Thread { [self] in
            var raw: Int32 = 0
            var usage = rusage()
            while wait4(spawned, &raw, 0, &usage) < 0 && errno == EINTR {}
            changed.withLock {
                peakKilobytes = usage.ru_maxrss
                status = raw
                changed.broadcast()
            }
        }.start()
    }

    var stdout: String { changed.withLock { String(decoding: output, as: UTF8.self) } }
    /// Standard output as bytes (binary output).
    var stdoutBytes: [UInt8] { changed.withLock { output } }
    /// The process's peak resident set (`ru_maxrss`, KiB), once it has exited. Linux charges a child
    /// spawned from this (large) test process with this process's own peak at its exec: measure a
    /// command's memory through `/usr/bin/time -f %M` instead.
    var peakResidentKilobytes: Int? { changed.withLock { peakKilobytes } }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    private var isRunning: Bool { changed.withLock { status == nil } }

    /// Waits up to `seconds` for the exit; returns the exit code (128 + signal when killed by one), or
    /// kills the process and returns nil if it is still running.
    func finish(within seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        let raw: Int32? = changed.withLock {
            while status == nil, changed.wait(until: deadline) {}
            return status
        }
        guard let raw else {
            stop()
            return nil
        }
        // Everything it wrote before exiting is read before the caller looks at stdout.
        let drained = Date().addingTimeInterval(5)
        changed.withLock { while !outputEnded, changed.wait(until: drained) {} }
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }

    /// Waits up to `seconds` until stdout contains `text`.
    func waitForOutput(_ text: String, within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        return changed.withLock {
            while !String(decoding: output, as: UTF8.self).contains(text) {
                guard changed.wait(until: deadline) else { return String(decoding: output, as: UTF8.self).contains(text) }
            }
            return true
        }
    }

    func stop() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        let deadline = Date().addingTimeInterval(10)
        changed.withLock { while status == nil, changed.wait(until: deadline) {} }
    }

    deinit { stop() }
}

/// Process ids whose command line contains `marker` (to prove nothing was left behind).
func processes(containing marker: String) -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.filter { $0.allSatisfy(\.isNumber) }.compactMap { pid in
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
        let command = String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self)
        return command.contains(marker) ? "\(pid): \(command)" : nil
    }
}
