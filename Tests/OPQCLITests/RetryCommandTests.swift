import Foundation
import Testing

/// `opq retry JOB` on a running coordinator: the failed and cancelled operations and their
/// not-succeeded dependants run again as a new job, with their names and edges.
@Suite(.serialized) struct RetryCommandTests {
    @Test func retryResubmitsFailedAndCancelledWithTheirDependants() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try AddWatchCommandTests.Cluster(scratch)
        defer { cluster.stop() }
        // build fails until `fixed` exists; package needs its success; docs and lint succeed; lint runs after build whatever happens.
        let file = try scratch.write("jobs.yaml", """
            defaults:
              cwd: \(scratch.path(""))
            operations:
              - name: prepare
                shell: echo run >> prepare.count
              - name: build
                after: [prepare]
                retries: 1
                shell: test -f fixed && echo run >> build.count
              - name: package
                after: [build]
                requires: success
                shell: echo run >> package.count
              - name: lint
                after: [build]
                shell: echo run >> lint.count
              - name: docs
                shell: echo run >> docs.count
            """)
        let submit = try cluster.opq(["submit", file, "--wait"], within: 60)
        #expect(submit.status == 1, "\(submit.stdout)\(submit.stderr)")
        let job = try #require(submit.stdout.split(separator: "\n").first.map(String.init))

        FileManager.default.createFile(atPath: scratch.path("fixed"), contents: Data())
        let retry = try cluster.opq(["retry", job, "--wait"], within: 60)
        #expect(retry.status == 0, "\(retry.stdout)\(retry.stderr)")
        #expect(retry.stdout.contains("retrying 2 operation(s) of \(job) as a new job"), "\(retry.stdout)")
        #expect(retry.stdout.contains("build (op-") && retry.stdout.contains("package (op-"), "\(retry.stdout)")
        for (name, count) in [("prepare", 1), ("build", 1), ("package", 1), ("lint", 1), ("docs", 1)] {
            let text = (try? String(contentsOfFile: scratch.path("\(name).count"), encoding: .utf8)) ?? ""
            #expect(text.split(separator: "\n").count == count, "\(name) ran \(text.split(separator: "\n").count) times")
        }

        // Only the cancelled one: package alone, its edge to the old failed build kept (by id).
        let none = try cluster.opq(["retry", job, "--cancelled"])
        #expect(none.status == 0, "\(none.stdout)\(none.stderr)")
        #expect(none.stdout.contains("retrying 1 operation(s)"), "\(none.stdout)")
        #expect(try cluster.opq(["retry", "nonsense"]).status == 2)
    }
}
