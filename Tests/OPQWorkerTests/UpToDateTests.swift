import Foundation
import OPQCore
import Testing
@testable import OPQWorker

/// `inputs:`/`outputs:` (job files): decided by the worker just before the command would start.
@Suite("Up to date")
struct UpToDateTests {
    /// A command in `directory` that records that it ran, with the given inputs and outputs.
    static func command(_ directory: URL, inputs: [String], outputs: [String]) -> Command {
        var command = Command.shell("echo ran >> ran.log", workingDirectory: directory.path)
        command.inputs = inputs
        command.outputs = outputs
        return command
    }

    static func touch(_ directory: URL, _ name: String, at seconds: Double) throws {
        let path = directory.appendingPathComponent(name).path
        if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: Data()) }
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: seconds)], ofItemAtPath: path)
    }

    @Test("outputs not older than any input: succeeded, up to date, nothing run")
    func upToDateSkips() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.touch(directory, "a.in", at: 1_000)
        try Self.touch(directory, "b.in", at: 2_000)
        try Self.touch(directory, "out", at: 2_000)  // as old as the newest input: make's rule says up to date
        let completion = try #require(await runCommands([Self.command(directory, inputs: ["a.in", "*.in"], outputs: ["out"])]))
        #expect(completion.report == AttemptReport(.succeeded, reason: .upToDate))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("ran.log").path))
    }

    @Test("an input newer than an output, a missing output or input, or no outputs: it runs",
          arguments: [(["a.in"], ["out", "old"]), (["a.in"], ["out", "missing"]), (["missing.in"], ["out"]), (["*.none"], ["out"]), (["a.in"], [])])
    func otherwiseItRuns(inputs: [String], outputs: [String]) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.touch(directory, "old", at: 500)
        try Self.touch(directory, "a.in", at: 1_000)
        try Self.touch(directory, "out", at: 2_000)
        let completion = try #require(await runCommands([Self.command(directory, inputs: inputs, outputs: outputs)]))
        #expect(completion.report == .succeeded)
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("ran.log").path))
    }
}
