import Foundation
import Testing

@Suite(.serialized) struct ControlCommandTests {
    @Test func suspendListShowLogsResumeQueueSetAndWorkers() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let clients = "ipc://\(scratch.path("clients.sock"))"
        let workers = "ipc://\(scratch.path("workers.sock"))"
        let coordinator = try Run("opq-coordinator", ["--workers-endpoint", workers, "--clients-endpoint", clients], in: scratch)
        let worker = try Run("opq-worker", ["--coordinator", workers, "--slots", "2", "--name", "w1"], in: scratch)
        defer { worker.stop(); coordinator.stop() }
        let environment = ["OPQ_COORDINATOR": clients]

        func opq(_ arguments: [String], within seconds: Double = 30) throws -> (status: Int32?, stdout: String, stderr: String) {
            let run = try Run("opq", arguments, in: scratch, environment: environment)
            let status = run.finish(within: seconds)
            return (status, run.stdout, run.stderr)
        }
        func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8)) }

        let suspend = try opq(["suspend"])
        #expect(suspend.status == 0, "\(suspend.stderr)")

        let file = try scratch.write("jobs.json", """
            {"operations": [{"name": "hello", "command": ["echo", "hello from opq"]}]}
            """)
        let submit = try opq(["submit", file, "--json"])
        #expect(submit.status == 0, "\(submit.stderr)")
        let receipt = try #require(try json(submit.stdout) as? [String: Any])
        let job = try #require(receipt["job"] as? Int)
        let op = try #require((receipt["operations"] as? [[String: Any]])?.first?["id"] as? Int)

        // Suspended: the operation stays ready.
        let list = try opq(["list", "--queue", "default", "--job", "job-\(job)", "--json"])
        #expect(list.status == 0, "\(list.stderr)")
        let listed = try #require(try json(list.stdout) as? [[String: Any]])
        #expect(listed.count == 1)
        #expect(listed.first?["id"] as? Int == op)
        #expect(listed.first?["state"] as? String == "ready")
        let ready = try opq(["list", "--state", "ready", "--json"])
        #expect((try json(ready.stdout) as? [[String: Any]])?.count == 1)
        let badState = try opq(["list", "--state", "sleeping"])
        #expect(badState.status == 2)
        // It says why it has not started, in words and in JSON.
        let waiting = try opq(["show", "op-\(op)"])
        #expect(waiting.stdout.contains("waiting:    its queue 'default' is suspended (opq resume --queue default)"),
                "\(waiting.stdout)\(waiting.stderr)")
        let waitingJSON = try #require(try json(try opq(["show", "op-\(op)", "--json"]).stdout) as? [String: Any])
        let reasons = try #require(waitingJSON["waiting"] as? [[String: Any]])
        // (The worker may not have registered yet, so "no live worker" can be listed too.)
        let suspended = try #require(reasons.first { $0["kind"] as? String == "queueSuspended" }, "\(reasons)")
        #expect(suspended["queue"] as? String == "default")

        let resume = try opq(["resume", "--queue", "default"])
        #expect(resume.status == 0, "\(resume.stderr)")
        let wait = try opq(["wait", "job-\(job)", "--timeout", "30"], within: 40)
        #expect(wait.status == 0, "\(wait.stdout)\(wait.stderr)")

        let show = try opq(["show", "op-\(op)", "--json"])
        #expect(show.status == 0, "\(show.stderr)")
        let shown = try #require(try json(show.stdout) as? [String: Any])
        #expect(shown["id"] as? Int == op)
        #expect(shown["name"] as? String == "hello")
        #expect(shown["job"] as? Int == job)
        #expect(shown["queue"] as? String == "default")
        #expect(shown["state"] as? String == "finished")
        #expect(shown["outcome"] as? String == "succeeded")
        #expect(shown["priority"] as? String == "normal")
        #expect(shown["attempts"] as? Int == 1)
        #expect(shown["exitCode"] as? Int == 0)
        #expect(shown.keys.contains("worker"))
        #expect((shown["waiting"] as? [Any])?.isEmpty == true, "a finished operation waits for nothing")

        let logs = try opq(["logs", String(op)])
        #expect(logs.status == 0, "\(logs.stderr)")
        #expect(logs.stdout == "hello from opq\n")

        let queueSet = try opq(["queue", "set", "default", "--max-concurrent", "1"])
        #expect(queueSet.status == 0, "\(queueSet.stderr)")
        let status = try opq(["status", "--json"])
        let queues = try #require((try json(status.stdout) as? [String: Any])?["queues"] as? [[String: Any]])
        let settings = try #require(queues.first { $0["name"] as? String == "default" })
        #expect(settings["maxConcurrent"] as? Int == 1)
        #expect(settings["suspended"] as? Bool == false)

        let priority = try opq(["priority", "op-\(op)", "fast"])
        #expect(priority.status == 2)

        let listedWorkers = try opq(["workers", "--json"])
        #expect(listedWorkers.status == 0, "\(listedWorkers.stderr)")
        let workerList = try #require(try json(listedWorkers.stdout) as? [[String: Any]])
        #expect(workerList.count == 1)
        #expect(workerList.first?["slots"] as? Int == 2)
        #expect(workerList.first?["name"] as? String == "w1")
    }
}
