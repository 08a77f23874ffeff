import Foundation
import Testing

@Suite(.serialized) struct SubmitCommandTests {
    @Test func submitJSONParsesAndWaitReportsTheOutcome() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let clients = "ipc://\(scratch.path("clients.sock"))"
        let workers = "ipc://\(scratch.path("workers.sock"))"
        let coordinator = try Run("opq-coordinator", ["--workers-endpoint", workers, "--clients-endpoint", clients], in: scratch)
        let worker = try Run("opq-worker", ["--coordinator", workers, "--slots", "2"], in: scratch)
        defer { worker.stop(); coordinator.stop() }
        let file = try scratch.write("jobs.json", """
            {"operations": [
              {"name": "first", "command": ["echo", "one"]},
              {"name": "second", "after": ["first"], "shell": "echo two"}
            ]}
            """)
        let submit = try Run("opq", ["submit", file, "--json"], in: scratch, environment: ["OPQ_COORDINATOR": clients])
        #expect(submit.finish(within: 30) == 0, "\(submit.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(submit.stdout.utf8)) as? [String: Any])
        let job = try #require(object["job"] as? Int)
        let operations = try #require(object["operations"] as? [[String: Any]])
        #expect(operations.compactMap { $0["name"] as? String } == ["first", "second"])
        let ids = operations.compactMap { $0["id"] as? Int }
        #expect(ids.count == 2 && ids[1] == ids[0] + 1)

        let wait = try Run("opq", ["--coordinator", clients, "wait", "job-\(job)", "--timeout", "30"], in: scratch)
        #expect(wait.finish(within: 40) == 0, "\(wait.stdout)\(wait.stderr)")
        #expect(wait.stdout == "job-\(job): 2 succeeded, 0 failed, 0 cancelled\n")

        // A job that already finished: wait returns at once.
        let again = try Run("opq", ["--coordinator", clients, "wait", String(job)], in: scratch)
        #expect(again.finish(within: 10) == 0)

        let status = try Run("opq", ["--coordinator", clients, "status", "job-\(job)", "--json"], in: scratch)
        #expect(status.finish(within: 10) == 0)
        let state = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(state["finished"] as? Bool == true)
        let listed = try #require(state["operations"] as? [[String: Any]])
        #expect(listed.compactMap { $0["outcome"] as? String } == ["succeeded", "succeeded"])
    }

    @Test func anUnreachableCoordinatorExitsWithStatus3() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("jobs.yaml", "operations: [{name: a}]\n")
        let submit = try Run("opq", ["submit", file, "--coordinator", "ipc://\(scratch.path("nobody.sock"))"], in: scratch)
        #expect(submit.finish(within: 30) == 3)
        #expect(submit.stderr.contains("no answer from the coordinator"))
    }
}
