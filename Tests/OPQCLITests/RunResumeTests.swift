import Foundation
import Testing

/// `opq run FILE --resume`: the last run's outcomes are recorded, and a resume runs only what did not
/// succeed, with its dependants, and what changed since.
@Suite(.serialized) struct RunResumeTests {
    /// Each operation appends a line to NAME.count, so the files tell what ran how often.
    private func jobFile(_ scratch: Scratch, docs: String = "echo run >> docs.count") throws -> String {
        try scratch.write("jobs.yaml", """
            defaults:
              cwd: \(scratch.path(""))
              requires: success
            operations:
              - name: prepare
                shell: echo run >> prepare.count
              - name: build
                after: [prepare]
                shell: test -f fixed && echo run >> build.count
              - name: package
                after: [build]
                shell: echo run >> package.count
              - name: docs
                shell: \(docs)
            """)
    }

    private func runs(_ scratch: Scratch) -> [String: Int] {
        var counts: [String: Int] = [:]
        for name in ["prepare", "build", "package", "docs"] {
            let text = (try? String(contentsOfFile: scratch.path("\(name).count"), encoding: .utf8)) ?? ""
            counts[name] = text.split(separator: "\n").count
        }
        return counts
    }

    private func run(_ scratch: Scratch, _ file: String, resume: Bool) throws -> (status: Int32?, output: String) {
        let run = try Run("opq", ["run", file, "--workers", "1", "--slots", "2"] + (resume ? ["--resume"] : []), in: scratch)
        let status = run.finish(within: 120)
        return (status, run.stdout + run.stderr)
    }

    @Test func resumeRunsOnlyWhatDidNotSucceedAndItsDependants() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try jobFile(scratch)
        let first = try run(scratch, file, resume: false)
        #expect(first.status == 1, "\(first.output)")
        #expect(runs(scratch) == ["prepare": 1, "build": 0, "package": 0, "docs": 1])

        FileManager.default.createFile(atPath: scratch.path("fixed"), contents: Data())
        let second = try run(scratch, file, resume: true)
        #expect(second.status == 0, "\(second.output)")
        #expect(second.output.contains("running 2 of 4 operations again"), "\(second.output)")
        #expect(runs(scratch) == ["prepare": 1, "build": 1, "package": 1, "docs": 1])

        let third = try run(scratch, file, resume: true)
        #expect(third.status == 0, "\(third.output)")
        #expect(third.output.contains("nothing to run"), "\(third.output)")
        #expect(runs(scratch) == ["prepare": 1, "build": 1, "package": 1, "docs": 1])

        // A changed operation runs again, alone when nothing depends on it.
        _ = try jobFile(scratch, docs: "echo changed >> docs.count")
        let fourth = try run(scratch, file, resume: true)
        #expect(fourth.status == 0, "\(fourth.output)")
        #expect(runs(scratch) == ["prepare": 1, "build": 1, "package": 1, "docs": 2])

        // Without --resume everything runs.
        let fifth = try run(scratch, file, resume: false)
        #expect(fifth.status == 0, "\(fifth.output)")
        #expect(runs(scratch) == ["prepare": 2, "build": 2, "package": 2, "docs": 3])
    }

    @Test func aChangedDependencyRerunsItsDependantsToo() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        FileManager.default.createFile(atPath: scratch.path("fixed"), contents: Data())
        let file = try jobFile(scratch)
        #expect(try run(scratch, file, resume: false).status == 0)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        try text.replacingOccurrences(of: "echo run >> prepare.count", with: "echo again >> prepare.count")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let resumed = try run(scratch, file, resume: true)
        #expect(resumed.status == 0, "\(resumed.output)")
        #expect(runs(scratch) == ["prepare": 2, "build": 2, "package": 2, "docs": 1])
    }
}
