import Foundation
import Testing

/// `opq show`: which worker ran an operation and when, in words and in JSON; `"version"` in the JSON objects.
@Suite(.serialized) struct ShowCommandTests {
    private func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    private func date(_ value: Any?) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (value as? String).flatMap(formatter.date(from:))
    }

    @Test func aFinishedOperationShowsTheWorkerThatRanItAndWhen() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try AddWatchCommandTests.Cluster(scratch)
        defer { cluster.stop() }
        let gate = "while ! test -f \(scratch.path("go")); do sleep 0.05; done; echo ran"
        let before = Date()
        let add = try cluster.opq(["add", "--name", "gated", "--shell", "--", gate])
        #expect(add.status == 0, "\(add.stderr)")
        let op = add.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        // While it runs: the worker holding it, nothing ran it yet.
        let deadline = Date().addingTimeInterval(60)
        var running: [String: Any] = [:]
        while Date() < deadline {
            running = try json(try cluster.opq(["show", op, "--json"]).stdout)
            if running["state"] as? String == "executing" { break }
        }
        #expect(running["state"] as? String == "executing", "\(running)")
        #expect(running["worker"] as? String == "w1")
        #expect(running["ranOn"] is NSNull && running["endedAt"] is NSNull)
        #expect(running["shell"] as? String == gate)
        #expect(try cluster.opq(["show", op]).stdout.contains("  worker:     w1\n"))

        FileManager.default.createFile(atPath: scratch.path("go"), contents: Data())
        let wait = try cluster.opq(["wait", op, "--timeout", "60"], within: 70)
        #expect(wait.status == 0, "\(wait.stdout)\(wait.stderr)")
        let after = Date()

        let shown = try cluster.opq(["show", op, "--json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let info = try json(shown.stdout)
        #expect(info["version"] as? Int == 1)
        #expect(info["state"] as? String == "finished")
        #expect(info["worker"] is NSNull, "no worker holds a finished operation")
        #expect(info["ranOn"] as? String == "w1")
        #expect(info["shell"] as? String == gate)
        let started = try #require(date(info["startedAt"]), "\(info)")
        let ended = try #require(date(info["endedAt"]), "\(info)")
        #expect(started <= ended)
        // The coordinator's clock is this machine's: both fall between the submission and the wait's end.
        #expect(started >= before.addingTimeInterval(-1) && ended <= after.addingTimeInterval(1), "\(before) \(started) \(ended) \(after)")
        let duration = try #require(info["durationSeconds"] as? Double)
        #expect(abs(ended.timeIntervalSince(started) - duration) < 0.01)

        let text = try cluster.opq(["show", op])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("  worker:     ran on w1\n"), "\(text.stdout)")
        #expect(text.stdout.contains("  command:    \(gate)\n"), "\(text.stdout)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        let startedLine = try #require(lines.first { $0.hasPrefix("  started:    ") }, "\(text.stdout)")
        let endedLine = try #require(lines.first { $0.hasPrefix("  ended:      ") }, "\(text.stdout)")
        #expect(date(startedLine.dropFirst(14).split(separator: " ").first.map(String.init)) == started, "\(startedLine)")
        #expect(date(endedLine.dropFirst(14).split(separator: " ").first.map(String.init)) == ended, "\(endedLine)")
        #expect(endedLine.hasSuffix(String(format: " (after %.2f s)", duration)), "\(endedLine)")

        // An argv command is shown as argv.
        let plain = try cluster.opq(["add", "--wait", "--json", "--", "echo", "two words"], within: 60)
        #expect(plain.status == 0, "\(plain.stderr)")
        let plainID = try #require((try json(plain.stdout)["operations"] as? [[String: Any]])?.first?["id"] as? Int, "\(plain.stdout)")
        let plainInfo = try json(try cluster.opq(["show", "op-\(plainID)", "--json"]).stdout)
        #expect(plainInfo["command"] as? [String] == ["echo", "two words"])
        #expect(plainInfo["ranOn"] as? String == "w1")
        #expect(try cluster.opq(["show", "op-\(plainID)"]).stdout.contains("  command:    echo 'two words'\n"))

        // `opq status --json` objects carry the version too.
        let job = try #require(info["job"] as? Int)
        let status = try json(try cluster.opq(["status", "job-\(job)", "--json"]).stdout)
        #expect(status["version"] as? Int == 1)
        let listed = try #require((status["operations"] as? [[String: Any]])?.first, "\(status)")
        #expect(listed["ranOn"] as? String == "w1" && date(listed["endedAt"]) == ended, "\(listed)")
        #expect(try json(try cluster.opq(["status", "--json"]).stdout)["version"] as? Int == 1)
    }

    /// `opq show --story`: what happened to an operation, step by step, each with the message or timer
    /// that caused it — the dependant's "ready" follows from the worker report that finished its dependency.
    @Test func theStoryListsEveryTransitionWithItsWorkerAndCause() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try AddWatchCommandTests.Cluster(scratch)
        defer { cluster.stop() }
        // The first runs until the second has been added, so the second waits for it.
        let gate = "while ! test -f \(scratch.path("go")); do sleep 0.05; done"
        let first = try cluster.opq(["add", "--name", "first", "--shell", "--", gate])
        #expect(first.status == 0, "\(first.stderr)")
        let firstID = first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let second = try cluster.opq(["add", "--name", "second", "--after", firstID, "--", "true"])
        #expect(second.status == 0, "\(second.stderr)")
        let op = second.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let id = try #require(Int(op.dropFirst(3)), "\(second.stdout)")
        FileManager.default.createFile(atPath: scratch.path("go"), contents: Data())
        let wait = try cluster.opq(["wait", op, "--timeout", "60"], within: 70)
        #expect(wait.status == 0, "\(wait.stdout)\(wait.stderr)")

        let shown = try cluster.opq(["show", "op-\(id)", "--story", "--json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let story = try #require(try json(shown.stdout)["story"] as? [String: Any], "\(shown.stdout)")
        let steps = try #require(story["steps"] as? [[String: Any]])
        #expect(story["complete"] as? Bool == true && story["omitted"] as? Int == 0)
        #expect(steps.map { $0["event"] as? String ?? "?" } == ["submitted", "ready", "dispatched", "started", "succeeded"], "\(steps)")
        let sequences = steps.compactMap { $0["sequence"] as? Int }
        #expect(sequences.count == steps.count && sequences == sequences.sorted() && Set(sequences).count == sequences.count)
        let causes = steps.map { $0["cause"] as? String ?? "" }
        #expect(causes[0].hasSuffix(" client request") || causes[0].hasSuffix(" submit"), "\(causes)")
        #expect(causes[1].hasSuffix(" worker report"), "ready because the dependency's finish was reported: \(causes)")
        #expect(causes[1] == causes[2], "dispatched in the same turn it became ready: \(causes)")
        #expect(causes[4].hasSuffix(" worker report"), "\(causes)")
        #expect(steps[2]["worker"] as? String == "w1" && steps[4]["worker"] as? String == "w1")
        let times = steps.compactMap { date($0["time"]) }
        #expect(times.count == steps.count && times == times.sorted(), "\(steps)")

        let text = try cluster.opq(["show", "op-\(id)", "--story"])
        #expect(text.status == 0, "\(text.stderr)")
        for words in ["  story:\n", "submitted; waiting for its dependencies  [cause #", "ready: its dependencies finished  [cause #",
                      "dispatched to worker w1 (attempt 1)", "started on worker w1 (attempt 1)", "succeeded on worker w1 (attempt 1)"] {
            #expect(text.stdout.contains(words), "lacks '\(words)':\n\(text.stdout)")
        }
        // Without --story nothing of it is asked for or printed.
        #expect(!(try cluster.opq(["show", "op-\(id)"]).stdout.contains("story:")))
        #expect(try json(try cluster.opq(["show", "op-\(id)", "--json"]).stdout)["story"] == nil)
    }
}
