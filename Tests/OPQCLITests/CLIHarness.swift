import Foundation
import OPQRuntime
import Testing

/// The package's built executables (`opq`, `opq-coordinator`, `opq-worker`), found next to the test bundle
/// the runtime's one way (``BinaryDirectory``).
enum Executables {
    static let binaries = (try? BinaryDirectory.locate(["opq", "opq-coordinator", "opq-worker"]))
        ?? BinaryDirectory(FileManager.default.currentDirectoryPath + "/.build/debug")
    static var directory: URL { URL(fileURLWithPath: binaries.path) }

    static func path(_ name: String) -> String { binaries.path(of: name) }

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
/// A runtime ``ChildProcess`` (its own process group; one thread reads stdout and one waits for the exit,
/// each signalling a condition), so the test waits on the events themselves (with deadlines), never by sleeping.
final class Run: Sendable {
    let process: ChildProcess
    let stderrPath: String

    /// Starts `executable` (a built product by name, or a path) with `arguments`; standard input comes from the file `input` (default /dev/null).
    init(_ executable: String, _ arguments: [String], in scratch: Scratch, environment: [String: String] = [:],
         input: String = "/dev/null") throws {
        stderrPath = scratch.path("\((executable as NSString).lastPathComponent)-\(UUID().uuidString.prefix(6)).err")
        let path = executable.contains("/") ? executable : Executables.path(executable)
        // A coordinator started without --state keeps its journal in the scratch directory, never in the
        // user's state directory (which another test or a real coordinator may hold).
        let added = ["XDG_STATE_HOME": scratch.path("xdg-state")].merging(environment) { $1 }
        process = try ChildProcess(path, arguments, environment: added, stdin: input, stdout: .capture, stderr: .file(stderrPath))
    }

    var pid: pid_t { process.pid }
    var stdout: String { process.output }
    /// Standard output as bytes (binary output).
    var stdoutBytes: [UInt8] { process.outputBytes }
    /// The process's peak resident set (`ru_maxrss`, KiB), once it has exited. Linux charges a child
    /// spawned from this (large) test process with this process's own peak at its exec: measure a
    /// command's memory through `/usr/bin/time -f %M` instead.
    var peakResidentKilobytes: Int? { process.peakResidentKilobytes }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Waits up to `seconds` for the exit; returns the exit code (128 + signal when killed by one), or
    /// kills the process and returns nil if it is still running.
    func finish(within seconds: Double) -> Int32? { process.finish(within: seconds) }

    /// Waits up to `seconds` until stdout contains `text`.
    func waitForOutput(_ text: String, within seconds: Double) -> Bool { process.waitForOutput(text, within: seconds) }

    func stop() { process.kill() }
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
