import Foundation
import Testing

/// A job's graph (`/jobs/ID`, `/api/jobs/ID/graph`) and an operation's story (`/operations/ID`, in
/// `/api/operations/ID`), served by a real coordinator and rendered by headless Chromium.
extension DashboardTests {
    @Test func aJobsGraphIsLaidOutInLayersAndChromiumShowsItColouredByState() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch, slots: 2)
        defer { cluster.stop() }
        // fetch → (parse, explode) → report; "explode" fails, so "report" (requires success) is cancelled.
        let file = try scratch.write("job.yaml", """
            operations:
              - {name: fetch, shell: "true"}
              - {name: parse, shell: "true", after: [fetch]}
              - {name: explode, shell: "exit 3", after: [fetch]}
              - {name: report, shell: "true", after: [parse, explode], requires: success}
              - {name: lonely, shell: "true"}
            """)
        let job = try cluster.submit(file, in: scratch)
        try cluster.wait(job, in: scratch)

        let graph = try #require(try getJSON("\(cluster.http)/api/jobs/\(job)/graph", in: scratch) as? [String: Any])
        let layers = try #require(graph["layers"] as? [[String: Any]])
        let names = layers.map { (($0["nodes"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String } }
        #expect(names == [["fetch", "lonely"], ["parse", "explode"], ["report"]], "\(graph)")
        let nodes = layers.flatMap { ($0["nodes"] as? [[String: Any]]) ?? [] }
        let state = Dictionary(uniqueKeysWithValues: nodes.map { ($0["name"] as? String ?? "", $0["state"] as? String ?? "") })
        #expect(state == ["fetch": "succeeded", "lonely": "succeeded", "parse": "succeeded", "explode": "failed", "report": "cancelled"])
        let id = Dictionary(uniqueKeysWithValues: nodes.map { ($0["name"] as? String ?? "", $0["id"] as? Int ?? 0) })
        let edges = Set(((graph["edges"] as? [[String: Any]]) ?? []).map { "\($0["from"] as? Int ?? 0)>\($0["to"] as? Int ?? 0)" })
        let expected = [("fetch", "parse"), ("fetch", "explode"), ("parse", "report"), ("explode", "report")]
        #expect(edges == Set(expected.map { "\(id[$0.0]!)>\(id[$0.1]!)" }))

        let dom = try chromiumDOM(cluster.http + "/jobs/\(job)", in: scratch)
        #expect(dom.components(separatedBy: "<g class=\"node ").count - 1 == 5, "nodes in:\n\(dom.prefix(6_000))")
        #expect(dom.contains("<g class=\"node failed\" data-op=\"\(id["explode"]!)\""), "the failed node:\n\(dom.prefix(6_000))")
        #expect(dom.contains("<g class=\"node cancelled\" data-op=\"\(id["report"]!)\""))
        #expect(dom.components(separatedBy: "<path class=\"edge\"").count - 1 == 4)
        let unknown = try Run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(cluster.http)/api/jobs/999999/graph"], in: scratch)
        #expect(unknown.finish(within: 30) == 0 && unknown.stdout == "404")
    }

    @Test func aBigJobsGraphShowsTheFirstNodesOfALayerAndCountsTheRest() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch, slots: 4)
        defer { cluster.stop() }
        let operations = (1...100).map { "{\"name\": \"n\($0)\", \"shell\": \"true\"}" }.joined(separator: ", ")
        let job = try cluster.submit(try scratch.write("job.json", "{\"operations\": [\(operations)]}"), in: scratch)
        try cluster.wait(job, in: scratch)
        let graph = try #require(try getJSON("\(cluster.http)/api/jobs/\(job)/graph", in: scratch) as? [String: Any])
        let layer = try #require((graph["layers"] as? [[String: Any]])?.first)
        #expect((layer["nodes"] as? [Any])?.count == 40 && (layer["hiddenStates"] as? [String: Int]) == ["succeeded": 60], "\(layer)")
        #expect(graph["operations"] as? Int == 100 && graph["laidOut"] as? Int == 100)
    }

    @Test func anOperationsStoryTellsEachStepWithItsWorkerAttemptAndReason() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch, slots: 1)
        defer { cluster.stop() }
        let file = try scratch.write("job.yaml", """
            operations:
              - {name: first, shell: "true"}
              - {name: flaky, shell: "echo trying; exit 4", after: [first], retries: 1}
            """)
        let job = try cluster.submit(file, in: scratch)
        try cluster.wait(job, in: scratch)
        let jobs = try #require(try getJSON("\(cluster.http)/api/jobs/\(job)/graph", in: scratch) as? [String: Any])
        let flaky = try #require(((jobs["layers"] as? [[String: Any]])?.last?["nodes"] as? [[String: Any]])?.first?["id"] as? Int)

        let details = try #require(try getJSON("\(cluster.http)/api/operations/\(flaky)", in: scratch) as? [String: Any])
        let story = try #require(details["story"] as? [String: Any])
        let entries = try #require(story["entries"] as? [[String: Any]])
        let events = entries.map { $0["event"] as? String ?? "" }
        #expect(events == ["submitted", "ready", "dispatched", "started", "retry", "ready", "dispatched", "started", "failed"], "\(entries)")
        #expect(story["isComplete"] as? Bool == true && story["state"] as? String == "failed")
        let sequences = entries.compactMap { $0["sequence"] as? Int }
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "not in causal order: \(sequences)")
        let texts = entries.compactMap { $0["text"] as? String }
        #expect(texts.contains("dispatched to worker w1 (attempt 1)") && texts.contains("dispatched to worker w1 (attempt 2)"), "\(texts)")
        #expect(texts.contains { $0.hasPrefix("attempt 1 failed on worker w1, exit status 4; retry in") }, "\(texts)")
        #expect(texts.last == "failed on worker w1 (attempt 2), exit status 4", "\(texts)")

        let dom = try chromiumDOM(cluster.http + "/operations/\(flaky)", in: scratch)
        #expect(dom.components(separatedBy: "<tr class=\"story-entry ").count - 1 == 9, "\(dom.prefix(6_000))")
        #expect(dom.contains("<tr class=\"story-entry event-retry\"") && dom.contains("trying"), "\(dom.prefix(6_000))")
    }

    /// The DOM of `url` after headless Chromium ran its scripts.
    func chromiumDOM(_ url: String, in scratch: Scratch) throws -> String {
        let arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                         "--user-data-dir=\(scratch.path("chromium-profile"))", "--window-size=1400,1000", "--dump-dom", url]
        let dump = try Run("/usr/bin/chromium", arguments, in: scratch, environment: ["HOME": scratch.path("")])
        defer { kill(-dump.pid, SIGKILL) }
        #expect(dump.finish(within: 120) == 0, "\(dump.stderr.suffix(2_000))")
        return dump.stdout
    }
}
