import Foundation
import Testing

/// deploy/slurm on a real single-node Slurm (munged, slurmctld, slurmd from Debian's packages, started
/// by deploy/slurm/single-node.sh in a scratch directory and stopped at the end, also on failure).
/// Needs root and `scripts/bootstrap.sh --slurm`; scripts/test.sh runs it in a phase of its own.
/// The jobs use the built (debug) executables through PATH.
@Suite(.serialized) struct SlurmTests {
    static let scripts = Executables.repository.appendingPathComponent("deploy/slurm").path

    /// A started Slurm; ``stop()`` tears it down. One node: this host (single-node.sh). More: each node a
    /// slurmd in a network namespace of its own on a private bridge (netns-cluster.sh), so a node reaches
    /// another only over the network, by address.
    final class SingleNodeSlurm {
        let scratch: Scratch
        let directory: String
        let script: String
        var environment: [String: String]

        init(nodes: Int = 1) throws {
            scratch = try Scratch()
            directory = scratch.path("slurm")
            script = SlurmTests.scripts + (nodes == 1 ? "/single-node.sh" : "/netns-cluster.sh")
            environment = ["SLURM_CONF": directory + "/slurm.conf",
                           "PATH": Executables.directory.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")]
            let start = try Run(script, ["start", directory] + (nodes == 1 ? [] : ["\(nodes)"]), in: scratch)
            let status = start.finish(within: 60)
            guard status == 0 else {
                stop()
                throw SlurmError("\(script) start exited \(String(describing: status)): \(start.stderr)")
            }
        }

        /// Runs `command` to its end (at most `seconds`), returning its exit status and standard output.
        @discardableResult
        func run(_ command: String, _ arguments: [String], within seconds: Double = 60, environment extra: [String: String] = [:]) throws -> (status: Int32?, output: String) {
            let process = try Run(command, arguments, in: scratch, environment: environment.merging(extra) { $1 })
            let status = process.finish(within: seconds)
            return (status, process.stdout + process.stderr)
        }

        /// Submits `arguments` with `sbatch --parsable`; returns the job id.
        func submit(_ arguments: [String]) throws -> String {
            let (status, output) = try run("/usr/bin/sbatch", ["--parsable"] + arguments)
            guard status == 0 else { throw SlurmError("sbatch \(arguments) failed: \(output)") }
            return output.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// Waits until every job in `jobs` has ended: a job depending on all of them (afterany) runs and ends.
        func waitForEnd(of jobs: [String], within seconds: Double = 60) throws {
            let (status, output) = try run("/usr/bin/sbatch", ["--wait", "--dependency=afterany:" + jobs.joined(separator: ":"),
                                                               "--output=/dev/null", "--wrap", "true"], within: seconds)
            guard status == 0 else { throw SlurmError("waiting for jobs \(jobs) failed (\(String(describing: status))): \(output)") }
        }

        /// `scontrol show job` as key=value pairs.
        func job(_ id: String) throws -> [String: String] {
            let output = try run("/usr/bin/scontrol", ["-o", "show", "job", id]).output
            var fields: [String: String] = [:]
            for pair in output.split(whereSeparator: \.isWhitespace) {
                guard let equals = pair.firstIndex(of: "=") else { continue }
                fields[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
            }
            return fields
        }

        func stop() {
            if let stop = try? Run(script, ["stop", directory], in: scratch) {
                _ = stop.finish(within: 60)
            }
            scratch.remove()
        }
    }

    struct SlurmError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func oneAllocationRunsTheJobFileAndExitsWithItsStatusSoAfterokChainsHold() throws {
        let slurm = try SingleNodeSlurm()
        defer { slurm.stop() }
        let runs = slurm.scratch.path("runs")
        let good = try slurm.scratch.write("good.yaml", """
            operations:
              - name: first
                shell: "echo first >> '\(runs)'"
              - name: second
                shell: "echo second-$SLURM_JOB_ID >> '\(runs)'"
                after: [first]
            """)
        let output = slurm.scratch.path("good.out")
        let (status, sbatchOutput) = try slurm.run("/usr/bin/sbatch", ["--wait", "-N", "1", "-c", "2", "--output=" + output,
                                                                       Self.scripts + "/opq-run.sbatch", good], within: 90)
        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(status == 0, "\(sbatchOutput)\n\(log)")
        #expect(log.contains("succeeded 2, failed 0, cancelled 0"), "the summary is printed: \(log)")
        #expect(log.contains(" on slurm-"), "the worker is named for the allocation: \(log)")
        let lines = try String(contentsOfFile: runs, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2 && lines[0] == "first" && lines[1].hasPrefix("second-"), "\(lines)")

        // A failing job file fails the batch job, so a job that depends on it (afterok) never runs.
        let bad = try slurm.scratch.write("bad.yaml", """
            operations:
              - name: fails
                command: ["false"]
            """)
        let failing = try slurm.submit(["-N", "1", "--output=" + slurm.scratch.path("bad.out"), Self.scripts + "/opq-run.sbatch", bad])
        let marker = slurm.scratch.path("dependent-ran")
        let dependent = try slurm.submit(["--dependency=afterok:" + failing, "--kill-on-invalid-dep=yes",
                                          "--output=/dev/null", "--wrap", "touch '\(marker)'"])
        try slurm.waitForEnd(of: [failing, dependent])
        let failed = try slurm.job(failing)
        #expect(failed["JobState"] == "FAILED" && failed["ExitCode"] == "1:0", "\(failed)")
        let never = try slurm.job(dependent)
        #expect(never["JobState"] == "CANCELLED" && never["Reason"] == "DependencyNeverSatisfied", "\(never)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the afterok job did not run")
        let badLog = (try? String(contentsOfFile: slurm.scratch.path("bad.out"), encoding: .utf8)) ?? ""
        #expect(badLog.contains("failed 1"), "\(badLog)")
    }

    /// Two nodes, each a network namespace: the coordinator on the batch node binds every interface with
    /// keys made for the allocation; the other node's worker dials the batch node's address with its own
    /// key. Two operations that each wait for the other to have started can only both finish if they run
    /// at once, on the two nodes (one slot each).
    @Test func oneAllocationOnTwoNodesRunsWorkersOnBothOverCurve() throws {
        let slurm = try SingleNodeSlurm(nodes: 2)
        defer { slurm.stop() }
        let marks = slurm.scratch.path("marks")
        try FileManager.default.createDirectory(atPath: marks, withIntermediateDirectories: true)
        let rendezvous = "touch '\(marks)'/$SLURMD_NODENAME; until [ $(ls '\(marks)' | wc -l) -ge 2 ]; do sleep 0.05; done"
        let job = try slurm.scratch.write("two.yaml", """
            operations:
              - name: left
                shell: "\(rendezvous)"
                timeout: 60
              - name: right
                shell: "\(rendezvous)"
                timeout: 60
              - name: after
                shell: "echo done-on-$SLURMD_NODENAME > '\(slurm.scratch.path("after"))'"
                after: [left, right]
            """)
        let output = slurm.scratch.path("two.out")
        let (status, sbatchOutput) = try slurm.run("/usr/bin/sbatch", ["--wait", "-N", "2", "-c", "1", "--output=" + output,
                                                                       Self.scripts + "/opq-run.sbatch", job], within: 120)
        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(status == 0, "\(sbatchOutput)\n\(log)")
        #expect(log.contains("succeeded 3, failed 0, cancelled 0"), "\(log)")
        let nodes = (try? FileManager.default.contentsOfDirectory(atPath: marks))?.sorted() ?? []
        #expect(nodes == ["opq-n1", "opq-n2"], "one operation on each node: \(nodes)")
        #expect(log.contains("on slurm-") && log.contains("-opq-n1") && log.contains("-opq-n2"), "\(log)")
        // The allocation's keys are gone with it.
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: slurm.scratch.url.path)) ?? []
        #expect(!leftovers.contains { $0.hasPrefix(".opq-run-") }, "\(leftovers)")
    }

    @Test func elasticWorkerJobsJoinDrainOnTermHandBackOnASecondTermAndKilledOrCancelledJobsAreRequeued() throws {
        let slurm = try SingleNodeSlurm()
        defer { slurm.stop() }
        let coordinator = try Run("opq-coordinator", ["--state", slurm.scratch.path("state"), "--heartbeat", "0.5",
                                                      "--workers-endpoint", "tcp://127.0.0.1:*", "--clients-endpoint", "tcp://127.0.0.1:*"],
                                  in: slurm.scratch)
        defer { coordinator.stop() }
        try #require(coordinator.waitForOutput("clients=", within: 30), "\(coordinator.stderr)")
        let fields = coordinator.stdout.split(whereSeparator: \.isWhitespace)
        let endpoint = { (key: String) in fields.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) } ?? "" }
        slurm.environment["OPQ_WORKER_ENDPOINT"] = endpoint("workers")
        slurm.environment["OPQ_COORDINATOR"] = endpoint("clients")
        let logs = slurm.scratch.path("worker-%A_%a.out")
        func workers(_ count: Int) throws -> String {
            try slurm.submit(["--array=1-\(count)", "-c", "1", "--output=" + logs, Self.scripts + "/opq-worker.sbatch"])
        }
        /// A job of `names`, each a 3-second command appending start and end lines to a file of its own.
        func submitJob(_ names: [String]) throws -> (job: String, watch: Run) {
            let text = "operations:\n" + names.map { name in
                "  - name: \(name)\n    shell: \"echo start >> '\(slurm.scratch.path(name))'; sleep 3; echo end >> '\(slurm.scratch.path(name))'\"\n"
            }.joined()
            let file = try slurm.scratch.write("job-\(names[0]).yaml", text)
            let (status, output) = try slurm.run(Executables.path("opq"), ["submit", file])
            try #require(status == 0, "\(output)")
            let job = output.trimmingCharacters(in: .whitespacesAndNewlines)
            return (job, try Run("opq", ["watch", job], in: slurm.scratch, environment: slurm.environment))
        }
        func lines(_ name: String) -> [String] {
            ((try? String(contentsOfFile: slurm.scratch.path(name), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func attempts(_ operation: String) throws -> Int? {
            let (_, output) = try slurm.run(Executables.path("opq"), ["show", operation, "--json"])
            let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
            return object?["attempts"] as? Int
        }

        // Two worker jobs; each takes one operation; `opq workers` shows both, named for their array task.
        let array = try workers(2)
        let first = try submitJob(["a", "b"])
        defer { first.watch.stop() }
        #expect(first.watch.waitForOutput("started   a (op-1) on slurm-\(array)_", within: 60), "\(first.watch.stdout)")
        #expect(first.watch.waitForOutput("started   b (op-2) on slurm-\(array)_", within: 60), "\(first.watch.stdout)")
        let listed = try slurm.run(Executables.path("opq"), ["workers"]).output
        #expect(listed.contains("slurm-\(array)_1") && listed.contains("slurm-\(array)_2"), "\(listed)")

        // Walltime's signal (--signal=B:TERM@60 sends it to the batch shell, which is opq-worker) = this
        // scancel: the worker takes no new work, lets its operation finish, says goodbye; its job ends.
        try slurm.run("/usr/bin/scancel", ["--batch", "--signal=TERM", "\(array)_1"])
        try slurm.waitForEnd(of: ["\(array)_1"])
        #expect(try slurm.run(Executables.path("opq"), ["wait", first.job], within: 60).status == 0)
        #expect(lines("a") == ["start", "end"] && lines("b") == ["start", "end"], "each ran once, to its end")
        #expect(try attempts("op-1") == 1 && attempts("op-2") == 1)
        #expect(!(try slurm.run(Executables.path("opq"), ["workers"]).output.contains("slurm-\(array)_1 ")))

        // A second TERM hands the running operation back at once; another worker job runs it.
        let second = try submitJob(["c"])
        defer { second.watch.stop() }
        #expect(second.watch.waitForOutput("started   c (op-3) on slurm-\(array)_2", within: 60), "\(second.watch.stdout)")
        let spare = try workers(1)
        let workerLog = try Run("/usr/bin/tail", ["-F", "-n", "+1", slurm.scratch.path("worker-\(array)_2.out")], in: slurm.scratch)
        defer { workerLog.stop() }
        try slurm.run("/usr/bin/scancel", ["--batch", "--signal=TERM", "\(array)_2"])
        #expect(workerLog.waitForOutput("stopping: taking no new work", within: 30), "\(workerLog.stdout)")
        try slurm.run("/usr/bin/scancel", ["--batch", "--signal=TERM", "\(array)_2"])
        #expect(second.watch.waitForOutput("started   c (op-3) on slurm-\(spare)_1", within: 60), "\(second.watch.stdout)")
        #expect(try slurm.run(Executables.path("opq"), ["wait", second.job], within: 60).status == 0)
        #expect(lines("c") == ["start", "start", "end"], "handed back: stopped once, then run to its end elsewhere")
        #expect(try attempts("op-3") == 2)

        // A worker killed mid-operation (SIGKILL to the batch shell, which is opq-worker; its commands die
        // with it by their parent-death signal): the coordinator finds the worker lost and requeues the
        // operation.
        let third = try submitJob(["d"])
        defer { third.watch.stop() }
        #expect(third.watch.waitForOutput("started   d (op-4) on slurm-\(spare)_1", within: 60), "\(third.watch.stdout)")
        let last = try workers(1)
        try slurm.run("/usr/bin/scancel", ["--batch", "--signal=KILL", "\(spare)_1"])
        #expect(third.watch.waitForOutput("started   d (op-4) on slurm-\(last)_1", within: 60), "\(third.watch.stdout)")
        #expect(try slurm.run(Executables.path("opq"), ["wait", third.job], within: 60).status == 0)
        #expect(lines("d") == ["start", "start", "end"], "the killed attempt never finished; the requeued one did")

        // A plain `scancel` cancels the job: Slurm sends SIGTERM to every process of it at once, the
        // worker and its command alike. The command did not fail — its worker was taken away — so the
        // operation is handed back and runs again on another worker, to its end.
        let fourth = try submitJob(["e"])
        defer { fourth.watch.stop() }
        #expect(fourth.watch.waitForOutput("started   e (op-5) on slurm-\(last)_1", within: 60), "\(fourth.watch.stdout)")
        let spare2 = try workers(1)
        try slurm.run("/usr/bin/scancel", ["\(last)_1"])
        #expect(fourth.watch.waitForOutput("started   e (op-5) on slurm-\(spare2)_1", within: 60), "\(fourth.watch.stdout)")
        #expect(try slurm.run(Executables.path("opq"), ["wait", fourth.job], within: 60).status == 0)
        #expect(lines("e") == ["start", "start", "end"], "cancelled with its worker, then run to its end elsewhere")
        #expect(try attempts("op-5") == 2)
    }
}
