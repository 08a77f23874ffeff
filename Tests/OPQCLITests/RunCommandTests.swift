import Foundation
import Testing

@Suite(.serialized) struct RunCommandTests {
    @Test func theExamplePipelineSucceedsAndPrintsASummary() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let example = Executables.repository.appendingPathComponent("examples/media-pipeline.yaml").path
        let run = try Run("opq", ["run", example, "--workers", "2", "--slots", "2"], in: scratch, environment: ["TMPDIR": scratch.path("")])
        let status = run.finish(within: 120)
        #expect(status == 0, "stdout:\n\(run.stdout)\nstderr:\n\(run.stderr)")
        #expect(run.stdout.contains("14 operations in"))
        #expect(run.stdout.contains("succeeded 14, failed 0, cancelled 0"))
        #expect(run.stdout.contains("slowest:"))
        // Each slowest line: a duration in seconds (two decimals) or, under a second, milliseconds (one).
        let slowest = run.stdout.components(separatedBy: "slowest:\n").dropFirst().first?.split(separator: "\n").prefix(5) ?? []
        #expect(slowest.count == 5, "\(run.stdout)")
        for line in slowest {
            #expect(line.range(of: #"^ +[0-9]+\.[0-9]{2} s  |^ +[0-9]+\.[0-9] ms  "#, options: .regularExpression) != nil, "\(line)")
            #expect(!line.contains(" 0.00 s "), "a duration under 10 ms shown as 0.00 s: \(line)")
        }
        #expect(run.stdout.contains("succeeded manifest (op-14)"), "plain progress lines when stdout is not a terminal")
        let left = try FileManager.default.contentsOfDirectory(atPath: scratch.path("")).filter { $0.hasPrefix("opq-run-") }
        #expect(left.isEmpty, "the private cluster directory is removed")
    }

    @Test func theFailingDAGExampleCancelsOnlyWhatRequiresSuccess() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let example = Executables.repository.appendingPathComponent("examples/failing-dag.yaml").path
        let run = try Run("opq", ["run", example, "--slots", "2"], in: scratch)
        #expect(run.finish(within: 120) == 1, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("7 operations in"), "\(run.stdout)")
        #expect(run.stdout.contains("succeeded 4, failed 1, cancelled 2"), "\(run.stdout)")
        #expect(run.stdout.contains("failed parse (op-2): exit status 1"), "\(run.stdout)")
        #expect(run.stdout.contains("stderr | data.json is truncated"), "\(run.stdout)")
        #expect(run.stdout.contains("cancelled publish (op-4): a dependency failed"), "\(run.stdout)")
        #expect(run.stdout.contains("succeeded cleanup (op-7)"), "requires: any runs after a cancelled dependency: \(run.stdout)")
    }

    @Test func theMapExampleHandlesEveryAwkwardName() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let example = Executables.repository.appendingPathComponent("examples/map-awkward-names.sh").path
        let run = try Run("/bin/bash", [example], in: scratch,
                          environment: ["OPQ": Executables.path("opq"), "TMPDIR": scratch.path("")])
        #expect(run.finish(within: 120) == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("compressed, verified and checksummed: 10 of 10 files"), "\(run.stdout)")
    }

    @Test func aJobFileErrorExitsWithStatus2NamingTheLine() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("jobs.yaml", """
            operations:
              - name: fetch
                command: [echo, hi]
              - name: encode
                after: [fetchh]
            """)
        let run = try Run("opq", ["run", file], in: scratch)
        #expect(run.finish(within: 30) == 2)
        #expect(run.stderr == "\(file):5: operation 'encode': unknown dependency 'fetchh' (did you mean 'fetch'?)\n")
        #expect(run.stdout.isEmpty, "nothing ran")
    }

    @Test func aFailingOperationExitsWithStatus1AndTheSummaryShowsItsLastOutput() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("jobs.yaml", """
            defaults: {requires: success}
            operations:
              - name: fine
                command: [echo, fine]
              - name: broken
                shell: 'echo "step 1"; echo "disk full: cannot write out.bin" >&2; exit 3'
              - name: downstream
                after: [broken]
                command: [echo, never]
            """)
        let run = try Run("opq", ["run", file], in: scratch)
        #expect(run.finish(within: 60) == 1, "stdout:\n\(run.stdout)\nstderr:\n\(run.stderr)")
        #expect(run.stdout.contains("succeeded 1, failed 1, cancelled 1"))
        #expect(run.stdout.contains("failed broken (op-2): exit status 3"))
        #expect(run.stdout.contains("stderr | disk full: cannot write out.bin"))
        #expect(run.stdout.contains("cancelled downstream (op-3): a dependency failed"))
    }

    @Test func interruptCancelsStopsEverythingAndRemovesTheDirectory() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let marker = "41.\(Int.random(in: 100...999))"
        let file = try scratch.write("jobs.yaml", """
            operations:
              - name: nap
                command: [sleep, "\(marker)"]
              - name: shell-nap
                shell: "sleep \(marker)"
            """)
        let run = try Run("opq", ["run", file, "--workers", "2"], in: scratch, environment: ["TMPDIR": scratch.path("")])
        #expect(run.waitForOutput("started   shell-nap", within: 30) && run.waitForOutput("started   nap", within: 30), "\(run.stdout)\(run.stderr)")
        kill(run.pid, SIGINT)
        #expect(run.finish(within: 20) == 130, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("interrupted; cancelling job-1 and stopping the local cluster: 2 unfinished operation(s) cancelled"), "\(run.stderr)")
        #expect(!run.stdout.contains("cancelled "), "one summary line, not a line per cancelled operation: \(run.stdout)")
        #expect(processes(containing: marker).isEmpty, "no command left running")
        #expect(processes(containing: scratch.path("opq-run-")).isEmpty, "no coordinator or worker left running")
        let left = try FileManager.default.contentsOfDirectory(atPath: scratch.path("")).filter { $0.hasPrefix("opq-run-") }
        #expect(left.isEmpty, "no socket file or directory left behind")
    }
}
