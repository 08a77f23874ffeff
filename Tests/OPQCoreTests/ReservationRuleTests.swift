import Testing
@testable import OPQCore

/// Forward dependencies (issue 18): accepted operations depend on a reservation, an id handed out for
/// an operation not submitted yet; the submission that takes it up links them atomically (SEMANTICS §3, §9).
@Suite struct ReservationRuleTests {
    /// Hands out `count` reservations, naming them `names` for the harness.
    static func reserve(_ h: inout Harness, _ names: [String]) throws -> [OperationID] {
        let ids = try h.core.reserve(names.count, at: h.time)
        for (name, id) in zip(names, ids) {
            h.ids[name] = id
            h.names[id] = name
        }
        try h.step()
        return ids
    }

    @discardableResult
    static func addDependency(_ h: inout Harness, _ name: String, on dependency: String) throws -> Bool {
        let changed = try h.core.addDependency(h.id(name), on: h.id(dependency), at: h.time)
        try h.step()
        return changed
    }

    @Test func reservationsAreIdsOfTheirOwnAndJournaled() throws {
        var h = Harness()
        let ids = try Self.reserve(&h, ["r1", "r2"])
        #expect(ids.map(\.description) == ["op-r1", "op-r2"])
        #expect(ids.allSatisfy(\.isReservation) && !OperationID(1).isReservation)
        #expect(h.take() == ["journal reserve op-r1 ×2"])
        #expect(throws: RequestError.invalidReservationCount(0)) { try h.core.reserve(0, at: 0) }
        #expect(h.core.takeEffects().isEmpty)
    }

    @Test func aForwardEdgeHoldsItsDependantUntilTheOperationSubmittedUnderTheReservationFinishes() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.suspend()
        try h.submit([op("b")])
        _ = try Self.reserve(&h, ["r"])
        _ = h.take()
        #expect(try Self.addDependency(&h, "b", on: "r"))
        #expect(h.take() == ["journal add b→r", "b pending"])
        #expect(try !Self.addDependency(&h, "b", on: "r"))  // a duplicate changes nothing
        #expect(h.core.blockers(of: h.id("b")) == [.dependencies([h.id("r")]), .queueSuspended("default")])
        try h.suspend("default", false)
        #expect(h.dispatchOrder.isEmpty && h.state("b") == .pending)

        var a = op("a")
        a.reservation = h.id("r")
        try h.submit([a])
        #expect(h.core.reservedDependants(of: h.id("r")) == nil)
        #expect(h.dispatchOrder == ["a"] && h.state("b") == .pending)
        try h.complete("a")
        #expect(h.dispatchOrder == ["a", "b"])
        // Taken up: the reservation is gone.
        var again = op("again")
        again.reservation = h.id("r")
        #expect(throws: SubmissionError.self) { try h.core.submit(Submission([again]), at: 0) }
        #expect(throws: RequestError.unknownOperation(h.id("r"))) { try h.core.addDependency(h.id("b"), on: h.id("r"), at: 0) }
    }

    @Test func takingUpAReservationThatClosesACycleRefusesTheSubmissionAndChangesNothing() throws {
        var h = Harness()
        try h.join("w1")
        try h.suspend()
        try h.submit([op("x")])
        _ = try Self.reserve(&h, ["r"])
        try Self.addDependency(&h, "x", on: "r")
        _ = h.take()
        // r's operation would depend on x, which depends on r.
        var closing = op("closing", ids: [h.id("x")])
        closing.reservation = h.id("r")
        #expect(throws: SubmissionError.cycle(["x", "closing"].map { $0 == "x" ? h.id("x").description : $0 })) {
            try h.core.submit(Submission([closing]), at: 0)
        }
        try h.step()
        #expect(h.take().isEmpty)
        #expect(h.core.operationTotal == 1)
        #expect(h.core.reservedDependants(of: h.id("r")) == [h.id("x")])
        #expect(h.state("x") == .pending)
        // The reservation is still open: a submission without the cycle takes it up.
        var fine = op("fine")
        fine.reservation = h.id("r")
        try h.submit([fine])
        try h.suspend("default", false)
        #expect(try h.runToEnd() == ["fine", "x"])
    }

    @Test func aPathThroughAFinishedOperationIsNoCycle() throws {
        var h = Harness()
        try h.suspend("held")
        try h.submit([op("x", queue: "held")])
        _ = try Self.reserve(&h, ["r"])
        try Self.addDependency(&h, "x", on: "r")
        try h.submit([op("u", queue: "held", ids: [h.id("x")])])
        try h.submit([op("f", queue: "held", ids: [h.id("u")])])
        try h.cancel("f")  // finished, with an edge onto the unfinished u
        // taker → f (finished) → u → x → taker would be a cycle only if f could still hold anything.
        var taker = op("taker", ids: [h.id("f")])
        taker.reservation = h.id("r")
        try h.submit([taker])
        #expect(h.snapshot("x").dependencies == [h.id("taker")])
    }

    @Test func aGivenUpReservationCountsAsCancelled() throws {
        var h = Harness()
        try h.join("w1", slots: 2)
        try h.suspend()
        try h.submit([op("any"), op("strict", requires: .success)])
        _ = try Self.reserve(&h, ["r"])
        try Self.addDependency(&h, "any", on: "r")
        try Self.addDependency(&h, "strict", on: "r")
        _ = h.take()
        try h.cancel("r")
        #expect(h.take() == ["journal cancel r", "any ready", "strict finished cancelled"])
        #expect(h.state("any") == .ready)
        #expect(h.outcome("strict") == .cancelled && h.snapshot("strict").reason == .dependencyFailed)
        var late = op("late")
        late.reservation = h.id("r")
        #expect(throws: SubmissionError.self) { try h.core.submit(Submission([late]), at: 0) }
        try h.suspend("default", false)
        #expect(h.dispatchOrder == ["any"])
    }

    @Test func aCancelledDependantIsDroppedWhenItsReservationIsTakenUp() throws {
        var h = Harness()
        try h.join("w1")
        try h.suspend()
        try h.submit([op("b")])
        _ = try Self.reserve(&h, ["r"])
        try Self.addDependency(&h, "b", on: "r")
        try h.cancel("b")
        #expect(h.outcome("b") == .cancelled)
        var a = op("a")
        a.reservation = h.id("r")
        try h.submit([a])
        try h.suspend("default", false)
        #expect(h.dispatchOrder == ["a"] && h.outcome("b") == .cancelled)
    }

    @Test func removingAForwardEdgeReleasesTheDependant() throws {
        var h = Harness()
        try h.join("w1")
        try h.suspend()
        try h.submit([op("b")])
        _ = try Self.reserve(&h, ["r"])
        try Self.addDependency(&h, "b", on: "r")
        #expect(h.state("b") == .pending)
        _ = h.take()
        #expect(try h.core.removeDependency(h.id("b"), on: h.id("r"), at: 0))
        try h.step()
        #expect(h.take() == ["journal remove b→r", "b ready"])
        #expect(try !h.core.removeDependency(h.id("b"), on: h.id("r"), at: 0), "an absent edge changes nothing")
        try h.suspend("default", false)
        #expect(h.dispatchOrder == ["b"])
    }

    @Test func aSubmissionDependsOnAReservationOrOnTheBatchOperationThatTakesItUp() throws {
        var h = Harness()
        try h.join("w1", slots: 4)
        _ = try Self.reserve(&h, ["r1", "r2"])
        // "early" waits on r1 (not in the batch); "late" on r2, which "taker" of the same batch takes up.
        var taker = op("taker")
        taker.reservation = h.id("r2")
        try h.submit([op("early", ids: [h.id("r1")]), op("late", ids: [h.id("r2")]), taker])
        #expect(h.dispatchOrder == ["taker"])
        #expect(h.core.reservedDependants(of: h.id("r1")) == [h.id("early")])
        try h.complete("taker")
        #expect(h.dispatchOrder == ["taker", "late"])
        var first = op("first")
        first.reservation = h.id("r1")
        try h.submit([first])
        try h.start("late")
        try h.complete("late")
        _ = try h.runToEnd()
        #expect(h.dispatchOrder == ["taker", "late", "first", "early"])
    }

    @Test func anOperationCancelledBeforeItWasSubmittedFinishesCancelledWithoutRunning() throws {
        var h = Harness()
        try h.join("w1")
        var a = op("a")
        a.isCancelled = true
        try h.submit([a, op("b", after: ["a"])])
        #expect(h.outcome("a") == .cancelled && h.snapshot("a").reason == .cancelRequested)
        #expect(h.dispatchOrder == ["b"])
    }

    @Test func reservationsAndForwardEdgesSurviveAReplayOfTheJournal() throws {
        var core = Scheduler()
        var journal: [JournalRecord] = []
        func record() { for case .journal(let entry) in core.takeEffects() { journal.append(entry) } }
        let b = try core.submit(Submission([op("b")]), at: 0).operations[0]
        let r = try core.reserve(2, at: 0)
        try core.addDependency(b, on: r[1], at: 0)
        try core.cancel(r[0], at: 0)
        record()

        var replayed = Scheduler()
        for entry in journal { try replayed.replay(entry, at: 0) }
        try replayed.checkInvariants()
        #expect(replayed.reservedDependants(of: r[1]) == [b])
        #expect(replayed.reservedDependants(of: r[0]) == nil)
        #expect(replayed.operation(b)?.state == .pending)
        #expect(try replayed.reserve(1, at: 0) == [OperationID.reservation(3)])  // numbers are never reused
    }
}
