import OPQCore
@testable import OPQCoordinator
import OPQWire
import Testing

/// `GetJob.summary_slowest`: the end-of-run report of `opq run` and `opq map`, counted by the coordinator
/// (issue 19: the client no longer reads every operation's details at the end of a job).
@Suite struct JobSummaryTests {
    /// The job of every `JobInfo` reply the turn sent.
    static func jobReplies(_ actions: [CoordinatorAction]) throws -> [Opq_V1_JobInfo] {
        var jobs: [Opq_V1_JobInfo] = []
        for case .reply(let frames) in actions {
            let (_, message, _) = try Frames.decodeRouted(frames, as: Opq_V1_CoordinatorToClient.self)
            if case .reply(let reply)? = message.body, case .job(let job)? = reply.result { jobs.append(job) }
        }
        return jobs
    }

    /// A job of six: a 0.3 s success, a 0.9 s failure, a 0.9 s success (tied with it), a 0.1 s success,
    /// one cancelled before it ran and one that never ran (four slots).
    static func finishedJob() throws -> StateDriver {
        var d = StateDriver()
        _ = try d.register("w1", slots: 4)
        _ = try d.submit(1, ["a", "b", "c", "d", "e", "f"])
        _ = d.turn()
        _ = try d.client("alice", 2) { $0.cancel.operation = 5 }
        _ = try d.finished("w1", 1, duration: 0.3, sequence: 1)
        _ = try d.finished("w1", 2, status: .failed, exitCode: 2, duration: 0.9, sequence: 2)
        _ = try d.finished("w1", 3, duration: 0.9, sequence: 3)
        _ = try d.finished("w1", 4, duration: 0.1, sequence: 4)
        _ = d.turn()
        return d
    }

    @Test func theSummaryCountsEveryOperationAndListsTheSlowestAndTheUnsucceeded() throws {
        var d = try Self.finishedJob()
        _ = try d.client("alice", 3) { $0.getJob.job = 1; $0.getJob.summarySlowest = 3 }
        let job = try #require(try Self.jobReplies(d.state.finishTurn(now: d.now)).first)
        #expect(job.hasSummary && job.details.isEmpty)
        let summary = job.summary
        #expect([summary.operations, summary.succeeded, summary.upToDate, summary.failed, summary.cancelled, summary.unfinished]
                == [6, 3, 0, 1, 1, 1])
        // Longest first, the tie in batch order.
        #expect(summary.slowest.map(\.id) == [2, 3, 1])
        #expect(summary.slowest.map(\.durationSeconds) == [0.9, 0.9, 0.3])
        #expect(summary.slowest.first?.name == "b" && summary.slowest.first?.exitCode == 2)
        #expect(summary.unsucceeded.map(\.id) == [2, 5])
        #expect(summary.unsucceeded.map(\.outcome) == [.failed, .cancelled])
    }

    @Test func theSummaryAgreesWithWhatEveryOperationsDetailsSay() throws {
        var d = try Self.finishedJob()
        _ = try d.client("alice", 3) { $0.getJob.job = 1; $0.getJob.includeOperations = true }
        _ = try d.client("alice", 4) { $0.getJob.job = 1; $0.getJob.summarySlowest = 100 }
        let replies = try Self.jobReplies(d.state.finishTurn(now: d.now))
        try #require(replies.count == 2)
        let details = replies[0].details, summary = replies[1].summary
        #expect(!replies[0].hasSummary)
        // The reference: counted from every operation's details, as opq did before.
        #expect(Int(summary.operations) == details.count)
        #expect(Int(summary.succeeded) == details.filter { $0.outcome == .succeeded }.count)
        #expect(Int(summary.failed) == details.filter { $0.outcome == .failed }.count)
        #expect(Int(summary.cancelled) == details.filter { $0.outcome == .cancelled }.count)
        #expect(Int(summary.unfinished) == details.filter { $0.state != .finished }.count)
        let timed = details.filter(\.hasDurationSeconds).enumerated()
            .sorted { $0.element.durationSeconds != $1.element.durationSeconds ? $0.element.durationSeconds > $1.element.durationSeconds : $0.offset < $1.offset }
            .map(\.element)
        #expect(summary.slowest == timed)
        #expect(summary.unsucceeded == details.filter { $0.state == .finished && $0.outcome != .succeeded })
    }

    @Test func noSummaryUnlessAskedAndAskingForNoneCountsOnly() throws {
        var d = try Self.finishedJob()
        _ = try d.client("alice", 3) { $0.getJob.job = 1 }
        _ = try d.client("alice", 4) { $0.getJob.job = 1; $0.getJob.summarySlowest = 0 }
        let replies = try Self.jobReplies(d.state.finishTurn(now: d.now))
        try #require(replies.count == 2)
        #expect(!replies[0].hasSummary)
        #expect(replies[1].hasSummary && replies[1].summary.slowest.isEmpty && replies[1].summary.unsucceeded.map(\.id) == [2, 5])
    }

    @Test func moreThanAHundredSlowestIsRefused() throws {
        var request = Opq_V1_ClientRequest()
        request.requestID = 1
        request.getJob.job = 1
        request.getJob.summarySlowest = 101
        #expect(throws: WireError.self) { try request.validate(rawFrames: 0) }
        request.getJob.summarySlowest = 100
        try request.validate(rawFrames: 0)
    }
}
