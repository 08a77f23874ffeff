import Foundation
import Testing

/// `opq show OP --result` and a job file that passes a handler's result to a dependant's command
/// (README "Handler results").
@Suite(.serialized) struct ShowResultTests {
    @Test func showResultPrintsTheRawResultAndADependantCommandReadsItFromItsEnvironment() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try AddWatchCommandTests.Cluster(scratch)
        defer { cluster.stop() }
        let data = try scratch.write("data", "abc")
        let digest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  // SHA-256 of "abc"
        let file = try scratch.write("job.yaml", """
            operations:
              - name: checksum
                handler: sha256
                payload: '\(data)'
              - name: record
                shell: 'printf %s "$OPQ_RESULT_checksum" > \(scratch.path("recorded"))'
                after: [checksum]
            """)
        let submit = try cluster.opq(["submit", file, "--json", "--wait"], within: 60)
        #expect(submit.status == 0, "\(submit.stdout)\(submit.stderr)")
        let receipt = try #require(try JSONSerialization.jsonObject(with: Data(submit.stdout.utf8)) as? [String: Any], "\(submit.stdout)")
        let ids = try #require(receipt["operations"] as? [[String: Any]]).compactMap { $0["id"] as? Int }
        #expect(ids.count == 2)
        #expect((try? String(contentsOfFile: scratch.path("recorded"), encoding: .utf8)) == digest, "the dependant's command got the result")

        let raw = try cluster.opq(["show", "op-\(ids[0])", "--result"])
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(raw.stdout == digest, "raw bytes, nothing else: \(raw.stdout)")
        let json = try cluster.opq(["show", "op-\(ids[0])", "--result", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect(object["version"] as? Int == 1 && object["resultBytes"] as? Int == 64)
        #expect(object["result"] as? String == Data(digest.utf8).base64EncodedString())
        #expect(object["resultText"] as? String == digest)
        #expect(try cluster.opq(["show", "op-\(ids[0])"]).stdout.contains("  result:     64 bytes"))
        #expect(try cluster.opq(["logs", "op-\(ids[0])"]).stdout.isEmpty, "the result is not its stdout")

        let none = try cluster.opq(["show", "op-\(ids[1])", "--result"])
        #expect(none.status == 0 && none.stdout.isEmpty, "a command has no result: \(none.stdout)\(none.stderr)")
        #expect(try cluster.opq(["show", "op-999", "--result"]).status != 0, "an unknown operation is an error")
    }
}
