import Foundation
import OPQCore
import Testing
@testable import OPQWorker

@Suite("Command operations")
struct CommandOperationTests {
    @Test("stdout and stderr are captured")
    func capturesOutput() async throws {
        let completion = try #require(await runCommands([.shell("echo out; echo err >&2")]))
        #expect(completion.report == .succeeded)
        #expect(completion.stdoutText == "out\n")
        #expect(completion.stderrText == "err\n")
        #expect(completion.startedAt != nil)
    }

    @Test("exit status 3 fails with exit code 3")
    func exitStatus() async throws {
        let completion = try #require(await runCommands([.shell("exit 3")]))
        #expect(completion.report == AttemptReport(.failed, reason: .exitStatus, exitCode: 3))
        #expect(completion.message == "exit status 3")
    }

    @Test("environment is added to the worker's and the working directory is applied")
    func environmentAndDirectory() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let command = Command.shell("echo \"$OPQ_TEST_VALUE\"; pwd; test -n \"$PATH\" && echo has-path",
                                    environment: ["OPQ_TEST_VALUE": "hello world"], workingDirectory: directory.path)
        let completion = try #require(await runCommands([command]))
        #expect(completion.report == .succeeded)
        let real = directory.resolvingSymlinksInPath().path
        #expect(completion.stdoutText == "hello world\n\(real)\nhas-path\n")
    }

    @Test("an argument with spaces, quotes and $ stays one argv element")
    func argumentsAreNotSplit() async throws {
        let argument = "a b 'c' \"d\" $HOME `x` ; e"
        let completion = try #require(await runCommands([Command(["printf", "%s|%s\n", argument, "second"])]))
        #expect(completion.report == .succeeded)
        #expect(completion.stdoutText == "\(argument)|second\n")
    }

    @Test("a program that does not exist fails with a clear message")
    func programNotFound() async throws {
        let completion = try #require(await runCommands([Command(["opq-no-such-program-xyz", "arg"])]))
        #expect(completion.report.status == .failed)
        #expect(completion.report.reason == .error)
        #expect(completion.stderrText.contains("cannot run 'opq-no-such-program-xyz': No such file or directory"))
        #expect(completion.stderrText.contains("execve: ENOENT"))
    }

    @Test("a working directory that does not exist is named in the message")
    func missingDirectory() async throws {
        let completion = try #require(await runCommands([Command(["true"], workingDirectory: "/nonexistent/opq-dir")]))
        #expect(completion.report.reason == .error)
        #expect(completion.stderrText.contains("working directory '/nonexistent/opq-dir' does not exist"))
    }

    @Test("a signal opq did not send fails with that signal")
    func foreignSignal() async throws {
        let completion = try #require(await runCommands([.shell("kill -SEGV $$")]))
        #expect(completion.report == AttemptReport(.failed, reason: .signal, signal: SIGSEGV))
    }

    @Test("only the last 64 KiB of a 1 MB output are kept, and the pipe is drained")
    func tailCapture() async throws {
        // 1 MiB of numbered lines on stdout and stderr at once: a child writing to an undrained pipe
        // would block at 64 KiB and never exit.
        let script = "i=0; while [ $i -lt 1048576 ]; do printf '%015d\\n' $i; i=$((i+16)); done; " +
            "head -c 1048576 /dev/zero >&2"
        let completion = try #require(await runCommands([.shell(script)], deadline: 60))
        #expect(completion.report == .succeeded)
        #expect(completion.stdout.count == TailBuffer.defaultCapacity)
        #expect(completion.stderr.count == TailBuffer.defaultCapacity)
        #expect(completion.stdoutText.hasSuffix(String(format: "%015d\n", 1048576 - 16)))
        #expect(completion.stdoutText.hasPrefix(String(format: "%015d\n", 1048576 - 65536)))
    }

    @Test("QoS background runs the process at niceness 19, utility at 10")
    func niceness() async throws {
        let background = try #require(await runCommands([.shell("nice")], qos: .background))
        #expect(background.stdoutText == "19\n")
        let utility = try #require(await runCommands([.shell("nice")], qos: .utility))
        #expect(utility.stdoutText == "10\n")
        let normal = try #require(await runCommands([.shell("nice")], qos: .userInteractive))
        #expect(normal.stdoutText == "0\n")
    }
}
