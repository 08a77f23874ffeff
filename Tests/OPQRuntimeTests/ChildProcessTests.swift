import Foundation
import OPQRuntime
import Testing

struct ChildProcessTests {
    private static func scratch() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("opq-runtime-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func capturedOutputAndTheExitCodeAreThoseOfTheChild() throws {
        let child = try ChildProcess("/bin/sh", ["-c", "echo hello; echo oops >&2; exit 3"], stdout: .capture, stderr: .null)
        #expect(child.finish(within: 30) == 3)
        #expect(child.output == "hello\n")
        #expect(!child.isRunning)
    }

    @Test func aSignalEndingTheChildGivesExitCode128PlusItsNumber() throws {
        let child = try ChildProcess("/bin/sh", ["-c", "kill -TERM $$"], stdout: .null)
        #expect(child.finish(within: 30) == 128 + SIGTERM)
    }

    @Test func killEndsTheWholeProcessGroup() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The shell starts a grandchild in its group and prints its pid.
        let child = try ChildProcess("/bin/sh", ["-c", "sleep 300 & echo $!; wait"], stdout: .capture)
        #expect(child.waitForOutput("\n", within: 30))
        let grandchild = pid_t(child.output.trimmingCharacters(in: .whitespacesAndNewlines))!
        child.kill()
        #expect(!child.isRunning)
        // The grandchild is gone too (or a zombie awaiting init): no longer in state S or R.
        let deadline = Date().addingTimeInterval(10)
        var alive = true
        while alive && Date() < deadline {
            let stat = (try? String(contentsOfFile: "/proc/\(grandchild)/stat", encoding: .utf8)) ?? ""
            alive = stat.contains(") S ") || stat.contains(") R ")
            if alive { _ = child.waitForExit(within: 0.05) }
        }
        #expect(!alive)
    }

    @Test func waitForOutputWakesOnWritesToTheLogFile() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/child.log"
        let child = try ChildProcess("/bin/sh", ["-c", "echo ready; exec cat"], name: "cat", stdin: nil, stdout: .file(log))
        #expect(child.waitForOutput("ready", within: 30))
        #expect(child.logPath == log)
        #expect(child.tail().contains("── cat (pid \(child.pid))"))
        child.kill()
        #expect(child.waitForExit(within: 1) != nil)
    }

    @Test func aPipedStandardInputReachesTheChildAndClosingItEndsIt() throws {
        let child = try ChildProcess("/bin/cat", [], name: "cat", stdinPipe: true, stdout: .capture)
        #expect(child.writeInput(Array("hello\n".utf8)))
        #expect(child.waitForOutput("hello\n", within: 30), "the line reached cat while its input is still open")
        #expect(child.isRunning)
        #expect(child.writeInput(Array("world\n".utf8)))
        child.closeInput()
        #expect(child.finish(within: 30) == 0)
        #expect(child.output == "hello\nworld\n")
        #expect(!child.writeInput([1]), "no pipe once closed")
    }

    @Test func writingToAChildThatStoppedReadingFailsInsteadOfKillingUs() throws {
        let child = try ChildProcess("/bin/true", [], stdinPipe: true)
        #expect(child.finish(within: 30) == 0)
        #expect(!child.writeInput(Array(repeating: 0, count: 1 << 17)))
    }

    @Test func aMissingExecutableIsAnErrorNamingIt() {
        #expect {
            _ = try ChildProcess("/nonexistent/opq-worker", [], name: "w1")
        } throws: { error in
            "\(error)".contains("/nonexistent/opq-worker") && "\(error)".contains("(w1)")
        }
    }
}
