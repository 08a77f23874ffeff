import Foundation
import Testing

/// `after_jobs:` in job files and `opq submit --after job-N`, against a real coordinator and worker.
@Suite(.serialized) struct AfterJobsTests {
    @Test func aJobWaitsForEarlierJobsAndRequiresSuccessIsHonoured() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let clients = "ipc://\(scratch.path("clients.sock"))"
        let workers = "ipc://\(scratch.path("workers.sock"))"
        let coordinator = try Run("opq-coordinator", ["--workers-endpoint", workers, "--clients-endpoint", clients], in: scratch)
        let worker = try Run("opq-worker", ["--coordinator", workers, "--slots", "4"], in: scratch)
        defer { worker.stop(); coordinator.stop() }
        let log = scratch.path("log")
        func submit(_ file: String, _ extra: [String] = []) throws -> (status: Int32?, job: Int) {
            let run = try Run("opq", ["--coordinator", clients, "submit", file, "--json", "--wait"] + extra, in: scratch)
            let status = run.finish(within: 60)
            let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
            return (status, try #require(object?["job"] as? Int, "\(run.stdout)\(run.stderr)"))
        }
        func outcomes(_ job: Int) throws -> [String: String] {
            let status = try Run("opq", ["--coordinator", clients, "status", "job-\(job)", "--json"], in: scratch)
            #expect(status.finish(within: 10) == 0)
            let state = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
            let listed = try #require(state["operations"] as? [[String: Any]])
            return Dictionary(uniqueKeysWithValues: listed.map { ($0["name"] as? String ?? "", $0["outcome"] as? String ?? "") })
        }

        let failing = try submit(try scratch.write("a.yaml", """
            operations:
              - name: broken
                shell: echo broken >> \(log); exit 1
            """))
        #expect(failing.status == 1)

        let after = try submit(try scratch.write("b.yaml", """
            after_jobs: [job-\(failing.job)]
            operations:
              - name: strict
                requires: success
                shell: echo strict >> \(log)
              - name: lenient
                shell: cat \(log) > \(scratch.path("seen"))
            """))
        #expect(after.status == 1, "strict is cancelled")
        #expect(try outcomes(after.job) == ["strict": "cancelled", "lenient": "succeeded", "after job-\(failing.job)": "cancelled"])
        #expect(try String(contentsOfFile: scratch.path("seen"), encoding: .utf8) == "broken\n", "lenient ran after job-\(failing.job)")

        let fine = try submit(try scratch.write("c.yaml", """
            operations:
              - name: ok
                command: ["true"]
            """))
        let chained = try submit(try scratch.write("d.yaml", """
            operations:
              - name: strict
                requires: success
                command: ["true"]
            """), ["--after", "job-\(fine.job)"])
        #expect(chained.status == 0)
        #expect(try outcomes(chained.job) == ["strict": "succeeded", "after job-\(fine.job)": "succeeded"])

        let unknown = try Run("opq", ["--coordinator", clients, "submit", scratch.path("d.yaml"), "--after", "job-999"], in: scratch)
        #expect(unknown.finish(within: 30) == 2, "\(unknown.stderr)")
        #expect(unknown.stderr.contains("job-999"), "\(unknown.stderr)")
    }
}
