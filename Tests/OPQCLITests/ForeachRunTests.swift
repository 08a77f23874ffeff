import Foundation
import Testing

/// `foreach` and `inputs:`/`outputs:` end to end: `opq run` with its private coordinator and workers.
@Suite(.serialized) struct ForeachRunTests {
    /// `opq ARGUMENTS` run in `directory`: globs and relative paths are taken where opq runs (its local workers inherit it).
    static func opq(in directory: String, _ arguments: [String], scratch: Scratch) throws -> Run {
        try Run("/bin/sh", ["-c", "cd \"$1\" && shift && exec \"$@\"", "sh", directory, Executables.path("opq")] + arguments, in: scratch)
    }

    @Test func theMediaForeachExampleEncodesDrawsAndIndexesEveryWAV() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let example = Executables.repository.appendingPathComponent("examples/media-foreach.sh").path
        let run = try Run("/bin/bash", [example], in: scratch, environment: ["OPQ": Executables.path("opq"), "TMPDIR": scratch.path("")])
        #expect(run.finish(within: 180) == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("9 operations in"), "\(run.stdout)")
        #expect(run.stdout.contains("succeeded 9, failed 0, cancelled 0"), "\(run.stdout)")
        for pitch in [220, 330, 440, 550] {
            #expect(run.stdout.contains("tone-\(pitch).flac") && run.stdout.contains("tone-\(pitch).png"), "the index lists both: \(run.stdout)")
        }
        // Run again where the script worked: every output is newer than its inputs, so nothing runs.
        let work = try #require(run.stdout.split(separator: "\n").first { $0.hasPrefix("working in ") }?.dropFirst("working in ".count))
        let example2 = Executables.repository.appendingPathComponent("examples/media-foreach.yaml").path
        let again = try Self.opq(in: String(work), ["run", example2], scratch: scratch)
        #expect(again.finish(within: 120) == 0, "\(again.stdout)\(again.stderr)")
        #expect(again.stdout.contains("succeeded 9 (9 up to date, not run)"), "\(again.stdout)")
    }

    @Test func anUnchangedPipelineRunsNothingAndATouchedInputRerunsExactlyItsChain() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        for directory in ["in", "mid", "out"] {
            try FileManager.default.createDirectory(atPath: scratch.path(directory), withIntermediateDirectories: true)
        }
        for name in ["a", "b", "c"] { _ = try scratch.write("in/\(name).txt", "text \(name)\n") }
        let file = try scratch.write("pipeline.yaml", """
            operations:
              - foreach: {glob: "in/*.txt"}
                operations:
                  - name: copy
                    shell: cp {} mid/{/} && echo copy {/} >> ran.log
                    inputs: ["{}"]
                    outputs: ["mid/{/}"]
                  - name: upper
                    after: [copy]
                    shell: tr a-z A-Z < mid/{/} > out/{/} && echo upper {/} >> ran.log
                    inputs: ["mid/{/}"]
                    outputs: ["out/{/}"]
              - name: join
                after: [upper/*]
                shell: cat out/*.txt > all.txt && echo join >> ran.log
                inputs: ["out/*.txt"]
                outputs: [all.txt]
            """)
        func run(_ extra: [String] = []) throws -> (stdout: String, ran: [String]) {
            try? FileManager.default.removeItem(atPath: scratch.path("ran.log"))
            let run = try Self.opq(in: scratch.path(""), ["run", file, "--slots", "2"] + extra, scratch: scratch)
            #expect(run.finish(within: 120) == 0, "\(run.stdout)\(run.stderr)")
            let log = (try? String(contentsOfFile: scratch.path("ran.log"), encoding: .utf8)) ?? ""
            return (run.stdout, log.split(separator: "\n").map(String.init).sorted())
        }

        let first = try run()
        #expect(first.ran == ["copy a.txt", "copy b.txt", "copy c.txt", "join", "upper a.txt", "upper b.txt", "upper c.txt"])
        #expect(try String(contentsOfFile: scratch.path("all.txt"), encoding: .utf8) == "TEXT A\nTEXT B\nTEXT C\n")

        let second = try run()
        #expect(second.ran.isEmpty, "nothing changed, nothing runs: \(second.stdout)")
        #expect(second.stdout.contains("succeeded 7 (7 up to date, not run), failed 0"), "\(second.stdout)")

        try "new b\n".write(toFile: scratch.path("in/b.txt"), atomically: false, encoding: .utf8)
        let third = try run()
        #expect(third.ran == ["copy b.txt", "join", "upper b.txt"], "exactly b's chain and the join: \(third.stdout)")
        #expect(third.stdout.contains("succeeded 7 (4 up to date, not run), failed 0"), "\(third.stdout)")
        #expect(try String(contentsOfFile: scratch.path("all.txt"), encoding: .utf8) == "TEXT A\nNEW B\nTEXT C\n")

        let forced = try run(["--force"])
        #expect(forced.ran.count == 7, "--force runs everything: \(forced.stdout)")
        #expect(forced.stdout.contains("succeeded 7, failed 0"), "\(forced.stdout)")
    }

    @Test func aTemplateErrorNamesTheFileLineAndItem() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("jobs.yaml", """
            operations:
              - foreach: [x, y]
                operations:
                  - name: show
                    command: [echo, "{3}"]
            """)
        let run = try Run("opq", ["run", file], in: scratch)
        #expect(run.finish(within: 30) == 2)
        #expect(run.stderr == "\(file):5: operation 'show': item 'x' (#1): {3} stands for argument 3, but the item has 1\n")
    }
}
