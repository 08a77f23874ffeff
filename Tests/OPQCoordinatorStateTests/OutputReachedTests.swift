@testable import OPQCore
import OPQWire
@testable import OPQCoordinator
import Testing

/// A watch that asks for running output learns where a stream has reached when it could not get the
/// bytes themselves: output written before the watch started, or while its client had messages waiting.
/// (Found by `opq map --line-buffer` on a loaded machine: a command printed a line before the CLI's watch
/// reached the coordinator, then blocked, and the line never showed while it ran.)
@Suite struct OutputReachedTests {
    @Test func aWatchStartingAfterOutputWasWrittenIsToldWhereEachStreamHasReached() throws {
        var d = StateDriver()
        try d.runOneOperation()
        _ = try d.output("w1", 1, "first\n", sequence: 2)
        _ = try d.output("w1", 1, offset: 6, "second\n", sequence: 3)
        _ = try d.output("w1", 1, stream: .stderr, "oops\n", sequence: 4)
        _ = d.turn()

        _ = try d.client("alice", 2) { $0.watch.job = 1; $0.watch.includeOutput = true }
        let sent = d.turn().filter { $0.contains("output") }
        #expect(sent == [#"reply alice output 1#1 stdout @13 """#, #"reply alice output 1#1 stderr @5 """#])
        // A watch without output, or of another queue, is told nothing.
        _ = try d.client("bob", 3) { $0.watch.job = 1 }
        _ = try d.client("carol", 4) { $0.watch.queue = "elsewhere"; $0.watch.includeOutput = true }
        #expect(d.turn().filter { $0.contains("output") } == [])
    }

    @Test func aClientWithMessagesWaitingIsToldWhereTheStreamReachedBehindThem() throws {
        var d = StateDriver()
        try d.runOneOperation()
        _ = try d.client("alice", 2) { $0.watch.job = 1; $0.watch.includeOutput = true }
        _ = d.turn()
        d.state.keepForLater(try Frames.encode(Opq_V1_CoordinatorToClient.reply(9) { $0.done = Opq_V1_Done() }, to: Array("alice".utf8)),
                             refusal: false)
        #expect(try d.output("w1", 1, "first\n", sequence: 2) == ["spool 1"])
        #expect(d.turn().filter { $0.contains("output") } == [#"reply alice output 1#1 stdout @6 """#])
    }

    @Test func anAttemptsOutputIsForgottenWhenItFinishesOrANewAttemptWrites() throws {
        var d = StateDriver()
        try d.runOneOperation()
        _ = try d.output("w1", 1, "first\n", sequence: 2)
        #expect(d.state.runningOutput[OperationID(1)] == RunningOutput(attempt: 1, stdout: 6, stderr: 0))
        _ = try d.finished("w1", 1, sequence: 3)
        _ = d.turn()
        #expect(d.state.runningOutput.isEmpty)
        _ = try d.client("alice", 2) { $0.watch.job = 1; $0.watch.includeOutput = true }
        #expect(d.turn().filter { $0.contains("output") } == [])
    }
}
