import Foundation
import Testing

/// `cpus:`/`memory:` through the command line (README "Resources"): `opq run` honours them, refuses an
/// operation larger than its own workers before starting anything, and `opq show` says why an operation
/// larger than every worker of a coordinator waits.
@Suite(.serialized) struct ResourceCommandTests {
    @Test func opqRunRunsOperationsWithinItsWorkersCpus() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let log = scratch.path("log")
        let file = try scratch.write("fits.yaml", """
            operations:
              - {name: a, shell: 'echo "start a $(date +%s.%N)" >> \(log); sleep 0.3; echo "end a $(date +%s.%N)" >> \(log)', cpus: 2}
              - {name: b, shell: 'echo "start b $(date +%s.%N)" >> \(log); sleep 0.3; echo "end b $(date +%s.%N)" >> \(log)', cpus: 2}
              - {name: c, command: ["true"], memory: 1M}
            """)
        let run = try Run("opq", ["run", file, "--slots", "3"], in: scratch)
        #expect(run.finish(within: 120) == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("succeeded 3, failed 0, cancelled 0"), "\(run.stdout)")
        // a and b need 2 of the 3 cpus each: they never overlap although the worker has 3 slots.
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map { $0.split(separator: " ") }
        let times = Dictionary(uniqueKeysWithValues: lines.map { ("\($0[0]) \($0[1])", Double($0[2])!) })
        let (first, second) = times["start a"]! < times["start b"]! ? ("a", "b") : ("b", "a")
        #expect(times["end \(first)"]! <= times["start \(second)"]!, "\(lines)")
    }

    @Test func opqRunRefusesAnOperationLargerThanItsWorkersNamingTheLine() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("big.yaml", """
            operations:
              - name: small
                command: ["true"]
              - name: render
                command: ["true"]
                cpus: 8
            """)
        let run = try Run("opq", ["run", file, "--slots", "2"], in: scratch)
        #expect(run.finish(within: 60) == 2, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("big.yaml:6: operation 'render': needs 8 cpus; opq run's workers have 2 cpus, so it could never run"),
                "\(run.stderr)")
        #expect(!run.stdout.contains("job-"), "nothing was started")
    }

    @Test func opqMapLocalRefusesMoreCpusThanItStarts() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = try Run("opq", ["map", "--local", "2", "--cpus", "4", "--", "echo", "{}", ":::", "a"], in: scratch)
        #expect(run.finish(within: 60) != 0)
        #expect(run.stderr.contains("--cpus 4 is more than the 2 cpus --local 2 starts"), "\(run.stderr)")
    }

    @Test func opqShowSaysWhyAnOperationLargerThanEveryWorkerWaits() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try AddWatchCommandTests.Cluster(scratch)  // one worker, --slots 2: 2 cpus
        defer { cluster.stop() }
        let add = try cluster.opq(["add", "--name", "render", "--cpus", "16", "--memory", "1G", "--", "true"])
        #expect(add.status == 0, "\(add.stderr)")
        let op = add.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let expected = "needs 16 cpus; the largest worker has 2 (it waits until a worker that large registers)"
        let deadline = Date().addingTimeInterval(60)
        var shown = ""
        while Date() < deadline, !shown.contains(expected) {  // until the worker has registered
            shown = try cluster.opq(["show", op]).stdout
        }
        #expect(shown.contains("  waiting:    " + expected), "\(shown)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(cluster.opq(["show", op, "--json"]).stdout.utf8)) as? [String: Any])
        let waiting = object["waiting"] as? [[String: Any]]
        #expect(waiting?.first?["kind"] as? String == "tooLarge", "\(object)")
        let status = try cluster.opq(["status"]).stdout
        #expect(status.contains("    waiting: \(op): " + expected), "\(status)")
        // opq-worker announced --slots 2 as its cpus, and the machine's memory.
        let workers = try cluster.opq(["workers"]).stdout
        #expect(workers.contains("w1") && workers.contains("; offers 2 cpus, ") && workers.contains(" of memory"), "\(workers)")
    }
}
