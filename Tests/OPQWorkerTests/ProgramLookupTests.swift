import Foundation
import OPQCore
import Testing
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#endif

/// Finding programs on PATH once per name (``ProgramLookup``) must still behave as a shell does when
/// programs appear, disappear or move.
@Suite("Program lookup")
struct ProgramLookupTests {
    /// Two search directories, `first` before `second`, removed when released.
    final class SearchPath {
        let root: URL
        let first: String
        let second: String
        let lookup: ProgramLookup

        init() throws {
            root = try makeTemporaryDirectory()
            first = root.appendingPathComponent("first").path
            second = root.appendingPathComponent("second").path
            for directory in [first, second] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
            lookup = ProgramLookup(searchPath: [first, second])
        }

        deinit { try? FileManager.default.removeItem(at: root) }

        /// Writes `directory/name`: a script printing `text`, executable unless told otherwise.
        func install(_ name: String, in directory: String, printing text: String, executable: Bool = true) throws {
            let path = directory + "/" + name
            try "#!/bin/sh\necho \(text)\n".write(toFile: path, atomically: false, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: executable ? 0o755 : 0o644], ofItemAtPath: path)
        }

        /// Spawns `name` through the lookup and returns what it printed, or the spawn's error.
        func run(_ name: String) throws -> String {
            let pipe = try Pipe.make()
            let pid: pid_t
            do { pid = try Spawner.spawn(Command([name]), stdout: pipe.write, stderr: pipe.write, programs: lookup) } catch {
                pipe.closeBoth()
                throw error
            }
            Pipe.close(pipe.write)
            var output: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(pipe.read, &buffer, buffer.count)
                if count > 0 { output += buffer[..<count]; continue }
                if count < 0 && errno == EINTR { continue }
                break
            }
            Pipe.close(pipe.read)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return String(decoding: output, as: UTF8.self)
        }
    }

    @Test("a program found once is taken from memory until its lifetime is over")
    func remembered() throws {
        let path = try SearchPath()
        try path.install("opq-lookup", in: path.second, printing: "second")
        let found = try path.lookup.resolve("opq-lookup", now: 100)
        #expect(found.path == path.second + "/opq-lookup" && !found.remembered)
        // A program that appears earlier on the search path is used once the remembered lookup is old.
        try path.install("opq-lookup", in: path.first, printing: "first")
        let again = try path.lookup.resolve("opq-lookup", now: 100 + ProgramLookup.lifetime / 2)
        #expect(again.path == path.second + "/opq-lookup" && again.remembered)
        let later = try path.lookup.resolve("opq-lookup", now: 100 + ProgramLookup.lifetime)
        #expect(later.path == path.first + "/opq-lookup" && !later.remembered)
    }

    @Test("a remembered program that disappeared is looked for again at once")
    func disappeared() throws {
        let path = try SearchPath()
        try path.install("opq-lookup", in: path.second, printing: "second")
        #expect(try path.run("opq-lookup") == "second\n")
        try FileManager.default.removeItem(atPath: path.second + "/opq-lookup")
        try path.install("opq-lookup", in: path.first, printing: "first")
        #expect(try path.run("opq-lookup") == "first\n")
        try FileManager.default.removeItem(atPath: path.first + "/opq-lookup")
        #expect(throws: SystemError.self) { try path.run("opq-lookup") }
    }

    @Test("a remembered program that lost its execute bit is looked for again")
    func noLongerExecutable() throws {
        let path = try SearchPath()
        try path.install("opq-lookup", in: path.first, printing: "first")
        try path.install("opq-lookup", in: path.second, printing: "second")
        #expect(try path.run("opq-lookup") == "first\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path.first + "/opq-lookup")
        #expect(try path.run("opq-lookup") == "second\n")
    }

    @Test("a program that was not found is found once it appears")
    func appeared() throws {
        let path = try SearchPath()
        do {
            _ = try path.run("opq-lookup")
            Issue.record("a missing program started")
        } catch {
            #expect((error as? SystemError)?.errno == ENOENT)
        }
        try path.install("opq-lookup", in: path.second, printing: "second")
        #expect(try path.run("opq-lookup") == "second\n")
    }
}
