import Foundation
import Testing

/// `opq run` and `opq map --local` start ONE process for their private cluster: the commands are children
/// of `opq-coordinator --local-workers`, not of an `opq-worker` process.
@Suite(.serialized) struct OneProcessRunTests {
    @Test func opqMapLocalRunsItsCommandsAsChildrenOfTheCoordinatorWithLocalWorkers() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // Each command prints its parent's command line: the process that spawned it.
        let run = try Run("opq", ["map", "--local", "2", "--quiet", "--", "/bin/sh", "-c", "tr '\\0' ' ' < /proc/$PPID/cmdline; echo", ":::", "a", "b"],
                          in: scratch, environment: ["TMPDIR": scratch.path("")])
        #expect(run.finish(within: 60) == 0, "\(run.stdout)\(run.stderr)")
        let parents = run.stdout.split(separator: "\n")
        #expect(parents.count == 2, "\(run.stdout)")
        #expect(parents.allSatisfy { $0.contains("opq-coordinator") && $0.contains("--local-workers 1") }, "\(run.stdout)")
        // A private cluster keeps no journal: nothing would ever replay it.
        #expect(parents.allSatisfy { $0.contains("--no-journal") && !$0.contains("--state") }, "\(run.stdout)")
        #expect(processes(containing: scratch.path("opq-run-")).isEmpty, "no coordinator left running")
    }

    @Test func opqRunRunsAJobOnItsOneProcessCluster() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("jobs.yaml", """
            operations:
              - name: one
                command: [sh, -c, "echo one"]
              - name: two
                command: [sh, -c, "echo two"]
                after: [one]
            """)
        let run = try Run("opq", ["run", file, "--workers", "2", "--slots", "1", "--output", "all"], in: scratch,
                          environment: ["TMPDIR": scratch.path("")])
        #expect(run.finish(within: 60) == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("succeeded 2, failed 0, cancelled 0"), "\(run.stdout)")
        #expect(run.stdout.contains("2 worker(s) × 1 slots"), "\(run.stdout)")
        // (The workers' names, local-1 and local-2, are checked by OneProcessClusterTests: a progress line
        // "started … on local-1" is not printed when the operation finished before the watch saw it start.)
    }
}
