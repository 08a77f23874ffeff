import OPQCore
@testable import OPQCoordinator
import OPQWire
import Testing

/// The coordinator's state machine driven in process: message sequences in, exact actions out, time
/// injected (``StateDriver``). The order of the actions is part of what is tested: records and their
/// commit come before anything that acknowledges them or follows from them (SEMANTICS §10).
@Suite struct CoordinatorStateTests {
    @Test func aSubmissionIsJournaledAndCommittedBeforeItsReplyAndItsDispatch() throws {
        var d = StateDriver()
        #expect(try d.register("w1") == [])
        #expect(d.turn() == ["commit", "→w1 welcome", "wake at 101.0"])
        #expect(try d.submit(7, ["a", "b"], after: ["b": ["a"]]) == [])
        #expect(d.turn() == [
            "journal the submission of job-1 (op-1…op-2)", "journal attempt 1 of op-1 on worker 'w1'", "commit",
            "→w1 dispatch 1#1", "alice 7 submitted job-1 [1, 2]".replyLine, "wake at 101.0",
        ])
    }

    @Test func aFinishUnlocksTheDependantsAndIsJournaledWithItsOutcome() throws {
        var d = StateDriver()
        _ = try d.register("w1")
        _ = try d.submit(7, ["a", "b"], after: ["b": ["a"]])
        _ = d.turn()
        #expect(try d.started("w1", 1, sequence: 1) == [])
        d.now = 100.5
        // A failure satisfies the dependency too (Foundation's rule); what it said is journaled with it.
        #expect(try d.finished("w1", 1, status: .failed, exitCode: 3, sequence: 2) == ["spool finished op-1#1", "journal output of op-1"])
        #expect(d.turn() == [
            "journal the finish of op-1 (failed)", "journal attempt 1 of op-2 on worker 'w1'", "commit",
            "→w1 dispatch 2#1", "wake at 101.0",
        ])
        _ = try d.started("w1", 2, sequence: 3)
        _ = try d.finished("w1", 2, sequence: 4)
        let end = d.turn()
        #expect(end.prefix(3) == ["journal the finish of op-2 (succeeded)", "journal the end of job-1", "commit"])
        #expect(d.state.core.isFinished(job: JobID(1)) == true)
        #expect(d.state.sessions[WorkerID("w1")]?.reportsDurable == 4, "the finishes are acknowledged once committed")
    }

    @Test func aCancelRepliesWithExactlyWhatItCancelled() throws {
        var d = StateDriver()
        _ = try d.register("w1")
        _ = try d.submit(1, ["a", "b", "c"])
        _ = d.turn()
        _ = try d.started("w1", 1, sequence: 1)
        _ = try d.finished("w1", 1, sequence: 2)
        _ = d.turn()  // a finished; b dispatched
        #expect(try d.client("alice", 2) { $0.cancel.job = 1 } == [])
        #expect(d.turn() == [
            "journal a cancel of 2 operations", "journal the finish of op-3 (cancelled)", "commit",
            "→w1 kill 2#1", "alice 2 cancelled [2, 3]".replyLine, "wake at 101.0",
        ])
    }

    @Test func aResubmissionWithTheSameKeyGetsTheFirstReceiptAndJournalsNothing() throws {
        var d = StateDriver()
        _ = try d.submit(1, ["a"], key: "k-1")
        #expect(d.turn() == ["journal the submission of job-1 (op-1) with idempotency key 'k-1'", "commit",
                             "alice 1 submitted job-1 [1]".replyLine, "wake at 101.0"])
        _ = try d.submit(2, ["a"], key: "k-1", client: "bob")
        #expect(d.turn() == ["commit", "bob 2 submitted job-1 [1] duplicate".replyLine, "wake at 101.0"])
        #expect(d.state.core.jobCount == 1)
    }

    @Test func aWaiterIsAnsweredWhenItsOperationFinishes() throws {
        var d = StateDriver()
        _ = try d.register("w1")
        _ = try d.submit(1, ["a"])
        _ = d.turn()
        _ = try d.client("bob", 5) { $0.wait.operation = 1 }
        #expect(!d.turn().contains { $0.contains("bob 5") }, "not finished: the wait waits")
        _ = try d.finished("w1", 1, sequence: 1)
        let lines = d.turn()
        #expect(lines.contains("notice bob 5 waited"))
        #expect(lines.firstIndex(of: "commit")! < lines.firstIndex(of: "notice bob 5 waited")!)
        #expect(d.state.waiters.isEmpty)
    }

    @Test func theWakeUpIsTheNextDeadline() throws {
        var d = StateDriver()
        _ = try d.register("w1")
        _ = d.turn()
        _ = try d.submit(1, ["a"])
        _ = try d.client("bob", 2) { $0.wait.operation = 1; $0.wait.timeoutSeconds = 0.25 }
        #expect(d.turn().last == "wake at 100.25", "the wait's timeout comes before the heartbeat due at 101")
        #expect(d.turn(at: 100.25).contains("reply bob 2 waited timed out"))
        #expect(d.turn(at: 100.5).last == "wake at 101.0", "then the heartbeat due to w1")
        #expect(d.turn(at: 101).contains("→w1 heartbeat"))
    }

    @Test func aSilentWorkerIsLostAndItsAttemptGoesToAnotherAfterTheLease() throws {
        var d = StateDriver()
        _ = try d.register("w1")
        _ = d.turn()
        _ = try d.submit(1, ["a"])
        _ = d.turn()
        _ = try d.register("w2")
        #expect(try d.worker("w2") { $0.heartbeat = Opq_V1_Heartbeat() } == [])
        #expect(d.turn(at: 102).contains("→w2 heartbeat"))
        _ = try d.worker("w2") { $0.heartbeat = Opq_V1_Heartbeat() }
        // w1 last heard at 100: lost at 103 (3 missed beats); its attempt waits out its lease (0.5 s more).
        let lost = d.turn(at: 103)
        #expect(lost.contains("→connection w1 disconnect internal"))
        #expect(!lost.contains { $0.contains("dispatch") }, "never two running copies: the lease has not run out")
        #expect(d.state.sessions[WorkerID("w1")] == nil)
        #expect(d.turn(at: 103.5).prefix(3) == [
            "journal a requeue of op-1", "journal attempt 2 of op-1 on worker 'w2'", "commit",
        ])
    }

    @Test func aClientThatReadsNothingHasItsRequestsRefusedBeforeTheyApply() throws {
        var d = StateDriver(clientBacklogMessages: 2)
        for k in 0..<2 { d.state.keepForLater([Array("alice".utf8), Array("reply \(k)".utf8)], refusal: false) }
        #expect(try d.submit(9, ["a"]) == [
            "refusal alice 9 error request not applied: 2 replies to this connection are still unread; read them, then send it again",
        ])
        #expect(d.turn() == ["commit", "wake at 100.01"], "nothing applied; the backlog is retried soon")
        #expect(d.state.core.jobCount == 0)
        #expect(try d.submit(10, ["a"], client: "bob") == [], "another client is served")
    }

    @Test func aRegistrationUnderALiveWorkersNameIsRefusedWithItsRetryDelay() throws {
        var d = StateDriver()
        _ = try d.register("w1")
        _ = d.turn()
        var message = Opq_V1_WorkerMessage()
        message.register.protocolVersion = WireLimits.protocolVersion
        message.register.workerName = "w1"
        message.register.slots = 1
        d.state.handleWorker(try Frames.encode(message, to: Array("impostor".utf8)), peerKey: nil, now: d.now)
        #expect(d.state.takeActions().map(d.render) == ["→connection impostor disconnect workerNameInUse"])
        #expect(d.state.sessions[WorkerID("w1")]?.identity == Array("w1".utf8))
    }

    /// A hosted worker's message passed over a direct link as it is (not encoded) must do exactly what its
    /// frames would: the same actions, and an invalid one refused the same way (validated, not decoded).
    @Test func aMessagePassedAsItIsDoesWhatItsFramesWould() throws {
        var register = Opq_V1_WorkerMessage()
        register.register.protocolVersion = WireLimits.protocolVersion
        register.register.workerName = "w1"
        register.register.slots = 2
        var noBody = Opq_V1_WorkerMessage()
        noBody.leaseRequest = 5
        var unknownOperation = Opq_V1_WorkerMessage.reports([.started(OperationID(999), attempt: 1)])
        unknownOperation.reports.sequence = 1
        var oldProtocol = register
        oldProtocol.register.protocolVersion = 0
        for (name, message, registered) in [("register", register, false), ("no body", noBody, true),
                                            ("unknown operation", unknownOperation, true),
                                            ("old protocol", oldProtocol, false)] {
            var framed = StateDriver(), passed = StateDriver()
            if registered {
                _ = try framed.register("w1", slots: 2)
                _ = try passed.register("w1", slots: 2)
            }
            framed.state.handleWorker(try Frames.encode(message, to: Array("w1".utf8)), peerKey: nil, now: framed.now)
            passed.state.handleWorker(message, raw: [], from: Array("w1".utf8), now: passed.now)
            let expected = framed.state.takeActions().map(framed.render), expectedTurn = framed.turn()
            #expect(!expected.isEmpty || !expectedTurn.isEmpty, "\(name): the frames cause something to compare")
            #expect(passed.state.takeActions().map(passed.render) == expected, "\(name)")
            #expect(passed.turn() == expectedTurn, "\(name): the turn after it")
        }
    }
}

extension String {
    /// A reply line as ``StateDriver`` renders it.
    var replyLine: String { "reply " + self }
}

/// Causal ids: every message and every turn's timers get the next id, and the events they cause carry it.
@Suite struct CausalIDTests {
    @Test func eachTransitionCarriesTheMessageOrTimerItFollowedFrom() throws {
        var d = StateDriver()
        _ = try d.register("w1")                          // #1 worker registration
        _ = d.turn()                                      // #2 timer
        _ = try d.submit(1, ["a"])                        // #3 submit: a is ready and dispatched at once
        _ = d.turn()                                      // #4 timer
        _ = try d.started("w1", 1, sequence: 1)           // #5 worker report
        _ = try d.client("bob", 2) { $0.cancel.operation = 1 }  // #6 cancel: a is told, still running
        _ = try d.finished("w1", 1, status: .cancelled, sequence: 2)  // #7 worker report
        _ = d.turn()
        let story = d.state.events.history(of: OperationID(1)).events.map { event -> String in
            guard case .operation(let change) = event.kind else { return "?" }
            return "\(change.state)\(change.isCancelled && change.state != .finished ? " cancelled" : "") ← \(event.cause)"
        }
        #expect(story == [
            "ready ← #3 submit", "dispatched ← #3 submit", "executing ← #5 worker report",
            "executing cancelled ← #6 cancel", "finished ← #7 worker report",
        ])
    }

    @Test func aWorkerDeclaredLostIsTheCauseOfItsAttemptsRequeue() throws {
        var d = StateDriver()
        _ = try d.register("w1")
        _ = try d.submit(1, ["a"])
        _ = d.turn()
        d.state.workerUnreachable(WorkerID("w1"), now: d.now)
        // Its lease (last heard at 100, 3 s) and the margin (0.5 s) are over at 103.5: requeued by that turn's timer.
        _ = d.turn(at: 103.4)
        #expect(d.state.events.history(of: OperationID(1)).events.count == 2)
        _ = d.turn(at: 103.5)
        let causes = d.state.events.history(of: OperationID(1)).events.map { "\($0.cause.kind)" }
        #expect(causes == ["submit", "submit", "timer"])
    }
}
