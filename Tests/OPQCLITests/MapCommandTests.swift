import Foundation
import Testing

/// File names a careless tool would split, expand or take for options.
let awkwardNames = [
    "plain.txt", "with space.tar.gz", "it's quoted.txt", "double\"quote.md", "$HOME and $(date).log", "*.star",
    "-rf", "semi;colon & amp.txt", "back\\slash", "tab\there.txt", "ünïcödé 日本.txt", ".hidden", "new\nline.txt",
]

@Suite(.serialized) struct MapCommandTests {
    /// Writes `names` (NUL-separated) as `input` in `scratch` and creates each as a file under `in/`.
    private func makeInput(_ scratch: Scratch, _ names: [String]) throws -> String {
        try FileManager.default.createDirectory(atPath: scratch.path("in"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: scratch.path("out"), withIntermediateDirectories: true)
        for name in names { FileManager.default.createFile(atPath: scratch.path("in/" + name), contents: Data(name.utf8)) }
        return try scratch.write("input", names.map { "in/" + $0 }.joined(separator: "\0"))
    }

    @Test func placeholdersReachTheCommandAsSingleArgumentsForAwkwardNames() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let input = try makeInput(scratch, awkwardNames)
        // Each command writes its argv, bracketed, to out/N.args (N = the item's sequence number).
        let run = try Run("opq", ["map", "-0", "--local", "2", "--cwd", scratch.path(""), "--",
                                  "sh", "-c", #"printf '[%s]' "$@" > "$0""#, "out/{#}.args", "{}", "{.}", "{/}", "{//}", "{/.}"],
                          in: scratch, input: input)
        #expect(run.finish(within: 60) == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("succeeded \(awkwardNames.count), failed 0"), "the summary goes to stderr: \(run.stderr)")
        for (index, name) in awkwardNames.enumerated() {
            let written = try String(contentsOfFile: scratch.path("out/\(index + 1).args"), encoding: .utf8)
            let dot = name.lastIndex(of: ".")  // GNU parallel's {.}: a leading dot starts an extension too
            let stem = dot.map { String(name[..<$0]) } ?? name
            #expect(written == "[in/\(name)][in/\(stem)][\(name)][in][\(stem)]", "item \(index + 1): \(name.debugDescription)")
        }
    }

    @Test func theSummaryShowsCommandsShorterThanASecondInMilliseconds() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = try Run("opq", ["map", "--local", "1", "--quiet", "--", "true"], in: scratch, input: try scratch.write("input", "a\nb\n"))
        #expect(run.finish(within: 60) == 0, "\(run.stdout)\(run.stderr)")
        // The summary goes to standard error (standard output is the commands').
        let slowest = run.stderr.components(separatedBy: "slowest:\n").dropFirst().first?.split(separator: "\n").prefix(2) ?? []
        #expect(slowest.count == 2, "\(run.stderr)")
        for line in slowest {
            // `true` takes milliseconds: "     1.6 ms  a (op-1)", never "    0.00 s  a (op-1)".
            #expect(line.range(of: #"^ +[0-9]+\.[0-9] ms  [ab] \(op-[12]\)$"#, options: .regularExpression) != nil, "\(line)")
        }
    }

    @Test func withoutPlaceholderTheItemIsAppendedAndFilesAreCopiedByExactName() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let input = try makeInput(scratch, awkwardNames)
        let run = try Run("opq", ["map", "--null", "--local", "2", "--cwd", scratch.path(""), "--quiet", "--", "cp", "-t", "out", "--"],
                          in: scratch, input: input)
        #expect(run.finish(within: 60) == 0, "\(run.stdout)\(run.stderr)")
        let copied = try FileManager.default.contentsOfDirectory(atPath: scratch.path("out"))
        #expect(Set(copied) == Set(awkwardNames))
        for name in awkwardNames {
            #expect(FileManager.default.contents(atPath: scratch.path("out/" + name)) == Data(name.utf8))
        }
    }

    @Test func shellModeQuotesItemsSoTheyAreNeverCode() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let names = awkwardNames.filter { !$0.contains("\n") }
        let input = try makeInput(scratch, names)
        let run = try Run("opq", ["map", "-0", "--local", "2", "--shell", "--cwd", scratch.path(""), "--",
                                  "printf %s {/} > out/{#}.txt && test -f {}"],
                          in: scratch, input: input)
        #expect(run.finish(within: 60) == 0, "\(run.stdout)\(run.stderr)")
        for (index, name) in names.enumerated() {
            #expect((try? String(contentsOfFile: scratch.path("out/\(index + 1).txt"), encoding: .utf8)) == name)
        }
    }

    @Test func aFailingItemExitsWith1AndIsNamedInTheSummary() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let input = try scratch.write("input", "0\n1\n0\n\n3\n")
        let run = try Run("opq", ["map", "--local", "2", "--", "sh", "-c", #"echo "exiting with $0" >&2; exit $0"#],
                          in: scratch, input: input)
        #expect(run.finish(within: 60) == 1, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("5 operations"), "the empty line is an item, as in GNU parallel: \(run.stderr)")
        #expect(run.stderr.contains("succeeded 3, failed 2"), "\(run.stderr)")
        #expect(run.stderr.contains("failed    1 (op-2): exit status 1"), "\(run.stderr)")
        #expect(run.stderr.contains("stderr | exiting with 3"), "\(run.stderr)")
        #expect(run.stderr.contains("exiting with 1\n"), "each command's stderr goes to stderr: \(run.stderr)")
        #expect(run.stdout.isEmpty, "nothing but the commands' stdout goes to stdout: \(run.stdout)")
    }

    @Test func usageErrorsExitWith2AndAnUnreachableCoordinatorWith3() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let input = try scratch.write("input", "a\n")
        let noCommand = try Run("opq", ["map", "--local", "1"], in: scratch, input: input)
        #expect(noCommand.finish(within: 30) == 2)
        #expect(noCommand.stderr.contains("no command given"), "\(noCommand.stderr)")
        let badPriority = try Run("opq", ["map", "--priority", "urgent", "--", "true"], in: scratch, input: input)
        #expect(badPriority.finish(within: 30) == 2)
        #expect(badPriority.stderr.contains("--priority 'urgent'"), "\(badPriority.stderr)")
        let notUTF8 = try scratch.write("latin1", "ok\n")
        FileManager.default.createFile(atPath: notUTF8, contents: Data([0x6F, 0x6B, 0x0A, 0xE9, 0x0A]))
        let latin1 = try Run("opq", ["map", "--local", "1", "--", "true"], in: scratch, input: notUTF8)
        #expect(latin1.finish(within: 30) == 2)
        #expect(latin1.stderr.contains("input item 2 is not valid UTF-8"), "\(latin1.stderr)")
        let unreachable = try Run("opq", ["map", "--coordinator", "ipc://\(scratch.path("nobody.sock"))", "--", "true"],
                                  in: scratch, input: input)
        #expect(unreachable.finish(within: 30) == 3, "\(unreachable.stderr)")
    }

    @Test func aNULByteInAnItemIsRefusedBeforeAnythingRuns() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let input = scratch.path("input")
        FileManager.default.createFile(atPath: input, contents: Data("ok\nabc\0; rm -rf /\n".utf8))
        let marker = scratch.path("ran")
        let run = try Run("opq", ["map", "--local", "1", "--", "touch", marker], in: scratch, input: input)
        #expect(run.finish(within: 30) == 2, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("input item 2 contains a NUL byte"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "nothing ran")
        let file = try scratch.write("list", "a\u{0}b\n")
        let fromFile = try Run("opq", ["map", "--local", "1", "--", "touch", marker, "::::", file], in: scratch)
        #expect(fromFile.finish(within: 30) == 2)
        #expect(fromFile.stderr.contains("input item 1 of \(file) contains a NUL byte"), "\(fromFile.stderr)")
    }

    @Test func numbersAndSlotsOutsideTheirRangeAreUsageErrors() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let input = try scratch.write("input", "a\n")
        for (arguments, message) in [
            (["--timeout", "1e300"], "--timeout must be a number of seconds greater than 0 and at most 3200000000"),
            (["--timeout", "nan"], "--timeout must be a number of seconds greater than 0"),
            (["--retries", "99999999"], "--retries must be from 0 to 65536"),
            (["-n", "0"], "-n must be from 1 to"),
            (["--local", "99999999999"], "--local must be from 1 to"),
        ] {
            let run = try Run("opq", ["map", "--local", "1"] + arguments + ["--", "true"], in: scratch, input: input)
            #expect(run.finish(within: 30) == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(arguments): \(run.stderr)")
        }
        let slot = try Run("opq", ["map", "--coordinator", "ipc://\(scratch.path("nobody.sock"))", "--", "echo", "{%}"], in: scratch, input: input)
        #expect(slot.finish(within: 30) == 2)
        #expect(slot.stderr.contains("{%} (the job slot) is known only on a private cluster: add --local N"), "\(slot.stderr)")
    }

    @Test func interruptCancelsTheItemsAndLeavesNoProcessBehind() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let marker = "43.\(Int.random(in: 100...999))"
        let input = try scratch.write("input", "a\nb\nc\nd\n")
        // --line-buffer: each command's first line is printed while it runs (progress lines go to stderr).
        let run = try Run("opq", ["map", "--local", "2", "--line-buffer", "--", "sh", "-c", "echo started $0; sleep \(marker)"],
                          in: scratch, environment: ["TMPDIR": scratch.path("")], input: input)
        #expect(run.waitForOutput("started a", within: 30) && run.waitForOutput("started b", within: 30), "\(run.stdout)\(run.stderr)")
        kill(run.pid, SIGINT)
        #expect(run.finish(within: 20) == 130, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("interrupted; cancelling job-1 and stopping the local cluster"), "\(run.stderr)")
        #expect(processes(containing: marker).isEmpty, "no command left running")
        #expect(processes(containing: scratch.path("opq-run-")).isEmpty, "no coordinator or worker left running")
        let left = try FileManager.default.contentsOfDirectory(atPath: scratch.path("")).filter { $0.hasPrefix("opq-run-") }
        #expect(left.isEmpty, "no socket file or directory left behind")
    }
}
