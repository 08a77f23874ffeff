import Foundation
import Testing

/// The smaller command-line items of issue 15: a mistyped subcommand, `add --after job-N`, `submit --wait --quiet`.
@Suite(.serialized) struct CommandLineConvenienceTests {
    @Test func aMistypedSubcommandSuggestsTheRightOneAndExits2() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let typo = try Run("opq", ["stauts"], in: scratch)
        #expect(typo.finish(within: 30) == 2)
        #expect(typo.stderr.contains("'stauts' is not an opq command (did you mean 'status'?)"), "\(typo.stderr)")
        let unknown = try Run("opq", ["frobnicate"], in: scratch)
        #expect(unknown.finish(within: 30) == 2)
        #expect(unknown.stderr.contains("the commands are: run, submit"), "\(unknown.stderr)")
        let hoisted = try Run("opq", ["--coordinator", "ipc://\(scratch.path("none.sock"))", "retyr", "job-1"], in: scratch)
        #expect(hoisted.finish(within: 30) == 2)
        #expect(hoisted.stderr.contains("did you mean 'retry'?"), "\(hoisted.stderr)")
    }

    @Test func addAfterAJobDependsOnEveryOperationOfIt() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try AddWatchCommandTests.Cluster(scratch)
        defer { cluster.stop() }
        // Both operations wait for the file `go`, so the job cannot finish before the test says so.
        let gate = "while ! test -f \(scratch.path("go")); do sleep 0.05; done"
        let file = try scratch.write("jobs.yaml", """
            operations:
              - {name: one, shell: "\(gate)"}
              - {name: two, shell: "\(gate)"}
            """)
        let submit = try cluster.opq(["submit", file, "--json"])
        #expect(submit.status == 0, "\(submit.stderr)")
        let receipt = try #require(try JSONSerialization.jsonObject(with: Data(submit.stdout.utf8)) as? [String: Any])
        let job = try #require(receipt["job"] as? Int)
        let ids = try #require(receipt["operations"] as? [[String: Any]]).compactMap { $0["id"] as? Int }

        let add = try cluster.opq(["add", "--after", "job-\(job)", "--", "true"])
        #expect(add.status == 0, "\(add.stderr)")
        let added = add.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let show = try cluster.opq(["show", added, "--json"])
        #expect(show.status == 0, "\(show.stderr)")
        let info = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])
        #expect(info["dependencies"] as? [Int] == ids)
        #expect(info["state"] as? String == "pending")

        FileManager.default.createFile(atPath: scratch.path("go"), contents: Data())
        let wait = try cluster.opq(["wait", added, "--timeout", "60"], within: 70)
        #expect(wait.status == 0, "\(wait.stdout)\(wait.stderr)")

        let bad = try cluster.opq(["add", "--after", "queue-3", "--", "true"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("write op-N, op-rN or job-N"), "\(bad.stderr)")
    }

    @Test func submitWaitQuietPrintsOnlyTheJobAndTheSummary() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try AddWatchCommandTests.Cluster(scratch)
        defer { cluster.stop() }
        let file = try scratch.write("jobs.yaml", "operations:\n  - {name: good, command: [\"true\"]}\n  - {name: bad, command: [\"false\"]}\n")
        let quiet = try cluster.opq(["submit", file, "--wait", "--quiet"], within: 60)
        #expect(quiet.status == 1, "\(quiet.stdout)\(quiet.stderr)")
        #expect(quiet.stdout.hasPrefix("job-1\n"), "\(quiet.stdout)")
        #expect(quiet.stdout.contains("2 operations in") && quiet.stdout.contains("failed bad"), "\(quiet.stdout)")
        #expect(!quiet.stdout.contains("started "), "no progress lines: \(quiet.stdout)")
        #expect(try cluster.opq(["submit", file, "--quiet"]).status == 2)
    }
}
