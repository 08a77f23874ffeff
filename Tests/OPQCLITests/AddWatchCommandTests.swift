import Foundation
import Testing

/// `opq add`, `opq map` and `opq watch` against a running coordinator and worker.
@Suite(.serialized) struct AddWatchCommandTests {
    /// A coordinator and one worker on ipc:// in `scratch`; stopped by the caller.
    struct Cluster {  // also used by RetryCommandTests and CommandLineConvenienceTests
        let coordinator: Run
        let worker: Run
        let environment: [String: String]
        let scratch: Scratch

        init(_ scratch: Scratch) throws {
            self.scratch = scratch
            let clients = "ipc://\(scratch.path("clients.sock"))"
            let workers = "ipc://\(scratch.path("workers.sock"))"
            coordinator = try Run("opq-coordinator", ["--workers-endpoint", workers, "--clients-endpoint", clients], in: scratch)
            worker = try Run("opq-worker", ["--coordinator", workers, "--slots", "2", "--name", "w1"], in: scratch)
            environment = ["OPQ_COORDINATOR": clients]
        }

        func stop() {
            worker.stop()
            coordinator.stop()
        }

        func opq(_ arguments: [String], input: String = "/dev/null", within seconds: Double = 30) throws -> (status: Int32?, stdout: String, stderr: String) {
            let run = try Run("opq", arguments, in: scratch, environment: environment, input: input)
            let status = run.finish(within: seconds)
            return (status, run.stdout, run.stderr)
        }
    }

    private func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8)) }

    @Test func addWithAfterRunsInDependencyOrderAndRefusesUnknownDependencies() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch)
        defer { cluster.stop() }
        let log = scratch.path("order.log")

        #expect(try cluster.opq(["suspend"]).status == 0)
        let first = try cluster.opq(["add", "--name", "first", "--", "sh", "-c", "echo first >> \"$0\"", log])
        #expect(first.status == 0, "\(first.stderr)")
        let firstID = first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(firstID.hasPrefix("op-"), "\(first.stdout)")
        // Higher priority, but it must wait for `first`.
        let second = try cluster.opq(["add", "--name", "second", "--after", firstID, "--priority", "veryHigh", "--requires", "success",
                                      "--json", "--shell", "--", "echo second >> '\(log)'"])
        #expect(second.status == 0, "\(second.stderr)")
        let receipt = try #require(try json(second.stdout) as? [String: Any])
        let secondID = try #require((receipt["operations"] as? [[String: Any]])?.first?["id"] as? Int)
        #expect((receipt["operations"] as? [[String: Any]])?.first?["name"] as? String == "second")
        let join = try cluster.opq(["add", "--after", firstID, "--after", "\(secondID)", "--name", "join"])
        #expect(join.status == 0, "an empty join point: \(join.stderr)")

        #expect(try cluster.opq(["resume"]).status == 0)
        let wait = try cluster.opq(["add", "--after", join.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "--wait", "--", "true"], within: 60)
        #expect(wait.status == 0, "\(wait.stdout)\(wait.stderr)")
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "first\nsecond\n")

        let unknown = try cluster.opq(["add", "--after", "op-999", "--", "true"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("op-999"), "\(unknown.stderr)")
        let notAnOp = try cluster.opq(["add", "--after", "queue-1", "--", "true"])  // job-N is a whole job (CommandLineConvenienceTests)
        #expect(notAnOp.status == 2)
        let failing = try cluster.opq(["add", "--wait", "--", "false"], within: 60)
        #expect(failing.status == 1, "\(failing.stdout)\(failing.stderr)")
    }

    @Test func remoteMapWithNoWaitThenWatchPrintsPlainLinesAndExitsWithTheJobsStatus() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch)
        defer { cluster.stop() }
        let input = try scratch.write("input", "one\ntwo\nthree\n")

        let map = try cluster.opq(["map", "--no-wait", "--json", "--queue", "mapped", "--", "sh", "-c", #"test "$0" != two"#], input: input)
        #expect(map.status == 0, "\(map.stderr)")
        let receipt = try #require(try json(map.stdout) as? [String: Any])
        let job = try #require(receipt["job"] as? Int)
        let names = (receipt["operations"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(names == ["one", "two", "three"])

        // Not a terminal: one plain line per start and finish; the job's status as the exit status.
        let watch = try cluster.opq(["watch", "job-\(job)"], within: 60)
        #expect(watch.status == 1, "\(watch.stdout)\(watch.stderr)")
        for name in ["one", "three"] { #expect(watch.stdout.contains("succeeded \(name) (op-"), "\(watch.stdout)") }
        #expect(watch.stdout.contains("failed    two (op-"), "\(watch.stdout)")
        #expect(!watch.stdout.contains("\u{1B}["), "no terminal escapes when stdout is not a terminal")

        // A job that already finished: watch returns at once, with the same lines from the snapshot.
        let again = try cluster.opq(["watch", "job-\(job)", "--failures-only"], within: 10)
        #expect(again.status == 1)
        #expect(again.stdout.contains("failed    two (op-") && !again.stdout.contains("succeeded"), "\(again.stdout)")

        // JSON lines for scripts: one object per start and finish.
        let lines = try cluster.opq(["watch", "job-\(job)", "--json"], within: 10)
        #expect(lines.status == 1)
        let events = try lines.stdout.split(separator: "\n").map { try #require(try json(String($0)) as? [String: Any]) }
        let finishes = events.filter { $0["event"] as? String == "finished" }
        #expect(finishes.count == 3, "\(lines.stdout)")
        let two = try #require(finishes.first { $0["name"] as? String == "two" })
        #expect(two["outcome"] as? String == "failed" && two["exitCode"] as? Int == 1 && two["job"] as? Int == job)
        let waited = try cluster.opq(["wait", "job-\(job)", "--json"], within: 10)
        #expect(waited.status == 1)
        let document = try #require(try json(waited.stdout) as? [String: Any])
        #expect(document["finished"] as? Bool == true)
        #expect((document["operations"] as? [[String: Any]])?.compactMap { $0["outcome"] as? String } == ["succeeded", "failed", "succeeded"])

        let ok = try cluster.opq(["map", "--quiet", "--", "true"], input: input, within: 60)
        #expect(ok.status == 0, "remote map waits by default: \(ok.stdout)\(ok.stderr)")
        #expect(ok.stderr.contains("3 operations"), "the summary goes to stderr, as parallel's messages: \(ok.stderr)")

        let unknown = try cluster.opq(["watch", "job-99"])
        #expect(unknown.status == 2, "\(unknown.stdout)\(unknown.stderr)")
    }

    @Test func watchingEverythingFollowsNewWorkUntilInterrupted() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch)
        defer { cluster.stop() }
        let watch = try Run("opq", ["watch"], in: scratch, environment: cluster.environment)
        defer { watch.stop() }
        // The watch subscribes before anything exists; everything added later is followed.
        #expect(watch.waitForOutput("watching everything: 0 unfinished operations", within: 30), "\(watch.stdout)\(watch.stderr)")
        let add = try cluster.opq(["add", "--name", "later", "--", "true"])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(watch.waitForOutput("succeeded later (op-", within: 30), "\(watch.stdout)\(watch.stderr)")
        kill(watch.pid, SIGINT)
        #expect(watch.finish(within: 10) == 0, "\(watch.stderr)")
    }
}
