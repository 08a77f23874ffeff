import Foundation
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

/// One run of a built executable, output captured to files; killed (SIGKILL) if it outlives its deadline
/// or the test.
final class Run: @unchecked Sendable {
    let process = Process()
    let stdoutPath: String
    let stderrPath: String

    init(_ executable: String, _ arguments: [String], in scratch: Scratch, environment: [String: String] = [:]) throws {
        let tag = UUID().uuidString.prefix(6)
        stdoutPath = scratch.path("\(executable)-\(tag).out")
        stderrPath = scratch.path("\(executable)-\(tag).err")
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: Executables.path(executable))
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Waits up to `seconds` for the exit status; kills the process and returns nil if it is still running.
    func finish(within seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        guard !process.isRunning else { stop(); return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Waits up to `seconds` until stdout contains `text`.
    func waitForOutput(_ text: String, within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if stdout.contains(text) { return true }
            usleep(20_000)
        }
        return false
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
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
