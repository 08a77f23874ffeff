import Foundation
import Testing

@Suite(.serialized) struct PruneCommandTests {
    @Test func pruneForgetsFinishedJobsAndStatusShowsWhatIsKept() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let clients = "ipc://\(scratch.path("clients.sock"))"
        let workers = "ipc://\(scratch.path("workers.sock"))"
        let coordinator = try Run("opq-coordinator", ["--workers-endpoint", workers, "--clients-endpoint", clients,
                                                      "--state", scratch.path("state")], in: scratch)
        let worker = try Run("opq-worker", ["--coordinator", workers, "--slots", "1"], in: scratch)
        defer { worker.stop(); coordinator.stop() }
        let environment = ["OPQ_COORDINATOR": clients]
        func opq(_ arguments: [String]) throws -> (status: Int32?, stdout: String, stderr: String) {
            let run = try Run("opq", arguments, in: scratch, environment: environment)
            let status = run.finish(within: 30)
            return (status, run.stdout, run.stderr)
        }
        let file = try scratch.write("jobs.json", #"{"operations": [{"name": "a", "command": ["true"]}]}"#)
        #expect(try opq(["submit", file, "--wait"]).status == 0)

        let recent = try opq(["prune", "--older-than", "1h"])
        #expect(recent.status == 0 && recent.stdout == "nothing to prune\n", "\(recent.stderr)")
        let bad = try opq(["prune", "--older-than", "soon"])
        #expect(bad.status == 2 && bad.stderr.contains("--older-than must be a duration"))
        let pruned = try opq(["prune", "--json"])
        #expect(pruned.status == 0, "\(pruned.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(pruned.stdout.utf8)) as? [String: Any])
        #expect(object["jobs"] as? [Int] == [1] && object["operations"] as? Int == 1)

        let status = try opq(["status"])
        #expect(status.status == 0 && !status.stdout.contains("job-1"), "\(status.stdout)")
        #expect(try opq(["status", "job-1"]).status == 2)
    }
}
