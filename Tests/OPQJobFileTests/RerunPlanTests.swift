import OPQCore
import OPQJobFile
import Testing

@Suite struct RerunPlanTests {
    private func spec(_ name: String, after: [String] = [], command: String = "true") -> OperationSpec {
        OperationSpec(name: name, work: .command(Command([command])), dependencies: after.map { .name($0) })
    }

    @Test func notSucceededOperationsRerunWithEveryDependantTransitively() {
        let specs = [spec("a"), spec("b", after: ["a"]), spec("c", after: ["b"]), spec("d"), spec("e", after: ["d", "c"]), spec("")]
        #expect(RerunPlan.rerun(specs, keeping: ["a", "b", "c", "d", "e"]) == [""])
        #expect(RerunPlan.rerun(specs, keeping: ["a", "c", "d", "e"]) == ["b", "c", "e", ""])
        #expect(RerunPlan.rerun(specs, keeping: ["a", "b", "c", "e"]) == ["d", "e", ""])
    }

    @Test func theRerunSubmissionDropsEdgesToKeptOperations() {
        let submission = Submission([spec("a"), spec("b", after: ["a"]), spec("c", after: ["b", "a"])])
        let rerun = RerunPlan.submission(submission, keeping: ["b", "c"])
        #expect(rerun.operations.map(\.name) == ["b", "c"])
        #expect(rerun.operations.map(\.dependencies) == [[], [.name("b")]])
    }

    @Test func theFingerprintChangesWithTheWorkButNotBetweenEqualSpecs() {
        #expect(RerunPlan.fingerprint(spec("a")) == RerunPlan.fingerprint(spec("a")))
        #expect(RerunPlan.fingerprint(spec("a")) != RerunPlan.fingerprint(spec("a", command: "false")))
        #expect(RerunPlan.fingerprint(spec("a")) != RerunPlan.fingerprint(spec("a", after: ["x"])))
        var labelled = spec("a")
        labelled.labels = ["gpu": "1", "zone": "b"]
        var same = spec("a")
        same.labels = ["zone": "b", "gpu": "1"]
        #expect(RerunPlan.fingerprint(labelled) == RerunPlan.fingerprint(same))
        #expect(RerunPlan.fingerprint(labelled) != RerunPlan.fingerprint(spec("a")))
    }
}
