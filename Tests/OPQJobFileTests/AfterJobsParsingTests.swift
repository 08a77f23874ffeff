import OPQCore
import OPQJobFile
import Testing

@Suite struct AfterJobsParsingTests {
    @Test func afterJobsMakesOneSuccessJoinThatEveryRootWaitsFor() throws {
        let job = try parse("""
            after_jobs: [job-12, 13]
            operations:
              - name: a
                command: ["true"]
              - name: b
                after: [a]
                requires: success
                command: ["true"]
            """)
        #expect(job.afterJobs == [JobID(12), JobID(13)])
        let waiting = job.waiting(forJobs: job.afterJobs, operations: [OperationID(5), OperationID(6)])
        let ops = waiting.submission.operations
        #expect(ops.map(\.name) == ["a", "b", "after job-12 job-13"], "the join comes last: the file's positions (and lines) stay")
        #expect(ops[0].dependencies == [.name("after job-12 job-13")])
        #expect(ops[1].dependencies == [.name("a")], "only operations that depend on nothing in the file wait directly")
        #expect(ops[2].dependencies == [.id(OperationID(5)), .id(OperationID(6))])
        #expect(ops[2].requires == .success && ops[2].work == .empty)
    }

    @Test func afterJobsMustBeJobIds() {
        do {
            _ = try parse("""
                after_jobs: [op-3]
                operations:
                  - command: ["true"]
                """)
            Issue.record("accepted op-3")
        } catch {
            #expect("\(error)" == "jobs.yaml:1: after_jobs lists job ids like job-12, not 'op-3'")
        }
    }
}
