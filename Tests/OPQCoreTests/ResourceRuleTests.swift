import Testing
@testable import OPQCore

/// `op(...)` needing `cpus` CPUs and `memory` bytes.
func sized(_ spec: OperationSpec, cpus: Int = 1, memory: Int = 0) -> OperationSpec {
    var spec = spec
    spec.resources = Resources(cpus: cpus, memory: memory)
    return spec
}

extension Harness {
    /// A worker offering `cpus` CPUs (nil: as many as slots) and `memory` bytes (nil: not announced).
    mutating func join(_ worker: WorkerID, slots: Int, cpus: Int?, memory: Int? = nil, queues: Set<String>? = nil) throws {
        core.workerJoined(worker, slots: slots, queues: queues, cpus: cpus, memory: memory, at: time)
        try step()
    }

    /// Each live worker's use of what it offers by name: "3/4 cpus", "2/4 cpus, 3G/4G".
    var loads: [String: String] {
        Dictionary(uniqueKeysWithValues: core.workerSnapshots.map { worker in
            (worker.id.name, "\(worker.usedCpus)/\(worker.cpus) cpus"
                + (worker.memory.map { ", \(ByteSize.format(worker.usedMemory))/\(ByteSize.format($0))" } ?? ""))
        })
    }
}

private let gib = 1 << 30

/// README "Resources", rules R1–R4: CPUs and memory per operation, capacity per worker, and the
/// reservation that keeps a large operation from being starved by smaller ones.
@Suite struct ResourceRuleTests {
    // MARK: R1: an operation goes only to a worker where it fits

    @Test func ruleR1_anOperationGoesOnlyToAWorkerWithEnoughFreeCpus() throws {
        var h = Harness()
        try h.join("small", slots: 4, cpus: 2)
        try h.join("big", slots: 4, cpus: 8)
        _ = h.take()
        try h.submit([sized(op("build"), cpus: 4)])
        #expect(h.take() == ["journal submit job-1", "build ready", "dispatch build→big", "build dispatched"])
    }

    @Test func ruleR1_theCpusOfRunningOperationsNeverExceedTheWorkersCpusThoughSlotsAreFree() throws {
        var h = Harness()
        try h.join("w", slots: 8, cpus: 4)
        try h.submit([sized(op("a"), cpus: 2), sized(op("b"), cpus: 2), op("c")])
        #expect(h.dispatchOrder == ["a", "b"])
        #expect(h.core.blockers(of: h.id("c")) == [.resourcesBusy(needs: .default)])
        #expect(h.core.blockers(of: h.id("c")).map(\.description) == ["in line for a worker with 1 cpu free"])
        _ = h.take()
        try h.complete("a")
        #expect(h.take() == ["a finished succeeded", "dispatch c→w", "c dispatched"])
        #expect(h.loads["w"] == "3/4 cpus")
    }

    @Test func ruleR1_memoryIsCheckedLikeCpus() throws {
        var h = Harness()
        try h.join("w", slots: 4, cpus: 4, memory: 4 * gib)
        try h.submit([sized(op("a"), memory: 3 * gib), sized(op("b"), memory: 2 * gib), sized(op("c"), memory: gib)])
        // a takes 3G; b (2G) does not fit and reserves w, so c (1G, behind b in line) does not go either.
        #expect(h.dispatchOrder == ["a"])
        try h.complete("a")
        #expect(h.dispatchOrder == ["a", "b", "c"])
        #expect(h.loads["w"] == "2/4 cpus, 3G/4G")
    }

    @Test func ruleR1_aWorkerThatAnnouncedNoMemoryIsNotCheckedForMemory() throws {
        var h = Harness()
        try h.join("w", slots: 2, cpus: nil)
        try h.submit([sized(op("a"), memory: 1 << 40), sized(op("b"), memory: 1 << 40)])
        #expect(h.dispatchOrder == ["a", "b"])
    }

    @Test func ruleR1_withoutCpusAWorkerOffersAsManyAsItsSlotsAndDefaultOperationsBehaveAsBefore() throws {
        var h = Harness()
        try h.join("w", slots: 3)
        try h.submit((1...5).map { op("op\($0)") })
        #expect(h.dispatchOrder == ["op1", "op2", "op3"])
        #expect(h.loads["w"] == "3/3 cpus")
        #expect(h.core.blockers(of: h.id("op4")) == [.workersBusy])
    }

    @Test func ruleR1_aReregistrationWithFewerCpusDispatchesNothingUntilTheUseIsBelowIt() throws {
        var h = Harness()
        try h.join("w", slots: 4, cpus: 4)
        try h.submit([sized(op("a"), cpus: 3), op("b")])
        #expect(h.dispatchOrder == ["a", "b"])
        let held = ["a", "b"].map { Scheduler.HeldAttempt(h.id($0), attempt: 1) }
        h.core.workerJoined("w", slots: 4, cpus: 2, holding: held, at: h.time)
        try h.step()
        try h.submit([op("c")])
        #expect(h.dispatchOrder == ["a", "b"])
        try h.complete("a")
        #expect(h.dispatchOrder == ["a", "b", "c"])
    }

    @Test func ruleR1_outOfRangeResourcesAreRefusedAtSubmissionAndChangeNothing() throws {
        var h = Harness()
        let cases: [(OperationSpec, String)] = [
            (sized(op("a"), cpus: 0), "operation 'a': cpus must be a whole number from 1 to 1048576, not 0"),
            (sized(op("a"), cpus: Limits.maxCpus + 1), "operation 'a': cpus must be a whole number from 1 to 1048576, not 1048577"),
            (sized(op("a"), cpus: Int.max), "operation 'a': cpus must be a whole number from 1 to 1048576, not \(Int.max)"),
            (sized(op("a"), cpus: Int.min), "operation 'a': cpus must be a whole number from 1 to 1048576, not \(Int.min)"),
            (sized(op("a"), memory: -1), "operation 'a': memory must be from 0 to 1P (1125899906842624 bytes), not -1 bytes"),
            (sized(op("a"), memory: Int.max), "operation 'a': memory must be from 0 to 1P (1125899906842624 bytes), not \(Int.max) bytes"),
        ]
        for (spec, message) in cases {
            let error = #expect(throws: SubmissionError.self) { try h.submit([op("ok"), spec]) }
            #expect(error?.description == message)
        }
        #expect(h.core.operationTotal == 0)
    }

    // MARK: R2: an operation larger than every worker waits, saying why

    @Test func ruleR2_anOperationLargerThanEveryWorkerWaitsWithItsReasonUntilALargeEnoughWorkerJoins() throws {
        var h = Harness()
        try h.join("w1", slots: 4, cpus: 4, memory: 16 * gib)
        try h.join("w2", slots: 2, cpus: 2, memory: 32 * gib)
        try h.submit([sized(op("huge"), cpus: 8), op("small")])
        #expect(h.dispatchOrder == ["small"])
        #expect(h.state("huge") == .ready)
        #expect(h.core.blockers(of: h.id("huge")).map(\.description)
                    == ["needs 8 cpus; the largest worker has 4 (it waits until a worker that large registers)"])
        try h.join("w3", slots: 8, cpus: 8)
        #expect(h.dispatchOrder == ["small", "huge"])
        #expect(h.held["huge"]?.worker == "w3")
    }

    @Test func ruleR2_theQueueSaysWhichReadyOperationsWaitForALargerWorker() throws {
        var h = Harness()
        try h.join("w", slots: 4, cpus: 4)
        try h.submit([sized(op("h1"), cpus: 16), op("small"), sized(op("h2"), cpus: 16), sized(op("m1"), memory: gib),
                      sized(op("h3"), cpus: 16)])
        #expect(h.dispatchOrder == ["small", "m1"])
        #expect(h.core.queue("default")?.tooLarge
                    == ["op-1 and 2 more: needs 16 cpus; the largest worker has 4 (it waits until a worker that large registers)"])
        try h.join("big", slots: 4, cpus: 16)
        #expect(h.core.queue("default")?.tooLarge == [])
    }

    @Test func ruleR2_theReasonNamesTheDimensionNoWorkerOffers() {
        typealias B = Scheduler.Blocker
        #expect(B.tooLarge(needs: Resources(cpus: 1, memory: 64 * gib), mostCpus: 8, mostMemory: 16 * gib).description
                    == "needs 64G of memory; the largest worker has 16G (it waits until a worker that large registers)")
        #expect(B.tooLarge(needs: Resources(cpus: 16, memory: 64 * gib), mostCpus: 8, mostMemory: 16 * gib).description
                    == "needs 16 cpus and 64G of memory; the largest workers have 8 cpus and 16G of memory (it waits until a worker that large registers)")
        #expect(B.tooLarge(needs: Resources(cpus: 8, memory: 32 * gib), mostCpus: 8, mostMemory: 32 * gib).description
                    == "needs 8 cpus and 32G of memory on one worker; no live worker has both (it waits until a worker that large registers)")
    }

    @Test func ruleR2_aPendingOperationAlreadySaysItIsTooLarge() throws {
        var h = Harness()
        try h.join("w", slots: 1, cpus: 1)
        try h.submit([op("first"), sized(op("then", after: ["first"]), cpus: 2)])
        #expect(h.core.blockers(of: h.id("then")) == [.dependencies([h.id("first")]), .tooLarge(needs: Resources(cpus: 2), mostCpus: 1, mostMemory: nil)])
    }

    // MARK: R3: the first operation in line that does not fit reserves a worker

    @Test func ruleR3_aStreamOfSmallOperationsNeverStarvesALargeOneAheadOfThem() throws {
        var h = Harness()
        try h.join("w", slots: 4, cpus: 4)
        try h.submit((1...4).map { op("s\($0)") })
        try h.submit([sized(op("big"), cpus: 4)])
        var next = 5
        // An adversary: every time a small one ends, another is submitted behind the big one.
        for running in ["s1", "s2", "s3"] {
            try h.submit([op("s\(next)")])
            next += 1
            _ = h.take()
            try h.complete(running)
            #expect(h.take() == ["\(running) finished succeeded"], "nothing may take the cpu \(running) freed")
        }
        #expect(h.core.blockers(of: h.id("big")) == [.resourcesBusy(needs: Resources(cpus: 4))])
        try h.complete("s4")
        #expect(h.take() == ["s4 finished succeeded", "job-1 finished", "dispatch big→w", "big dispatched"])
        try h.complete("big")
        #expect(h.dispatchOrder == ["s1", "s2", "s3", "s4", "big", "s5", "s6", "s7"])
    }

    @Test func ruleR3_smallOperationsStillGoToWorkersThatAreNotReserved() throws {
        var h = Harness()
        try h.join("w1", slots: 4, cpus: 4)
        try h.join("w2", slots: 2, cpus: 2)
        try h.submit([op("s1"), op("s2"), op("s3"), op("s4"), op("s5"), op("s6")])
        try h.submit([sized(op("big"), cpus: 4), op("t1"), op("t2")])
        // Every slot is taken; big reserves w1 (the only worker that can hold it), so t1 goes to w2 when w2 frees.
        #expect(Set(h.dispatchOrder) == ["s1", "s2", "s3", "s4", "s5", "s6"])
        let onW2 = h.dispatchOrder.filter { h.held[$0]?.worker == "w2" }
        let onW1 = h.dispatchOrder.filter { h.held[$0]?.worker == "w1" }
        try h.complete(onW2[0])
        #expect(h.dispatchOrder.last == "t1" && h.held["t1"]?.worker == "w2")
        try h.complete(onW1[0])
        #expect(h.dispatchOrder.last == "t1", "w1 is reserved for big")
        for name in onW1.dropFirst() { try h.complete(name) }
        #expect(h.dispatchOrder.last == "big" && h.held["big"]?.worker == "w1")
    }

    @Test func ruleR3_theReservationGoesToTheEligibleWorkerClosestToFitting() throws {
        var h = Harness()
        try h.join("w1", slots: 4, cpus: 4)
        try h.join("w2", slots: 4, cpus: 4)
        try h.submit([sized(op("a"), cpus: 3), sized(op("b"), cpus: 2)])
        #expect(h.held["a"]?.worker == "w1" && h.held["b"]?.worker == "w2")
        // big (4) fits neither; w2 has 2 free, w1 has 1: w2 is reserved, so small goes to w1.
        try h.submit([sized(op("big"), cpus: 4), op("small")])
        #expect(h.dispatchOrder == ["a", "b", "small"] && h.held["small"]?.worker == "w1")
        try h.complete("b")
        #expect(h.dispatchOrder.last == "big" && h.held["big"]?.worker == "w2")
    }

    @Test func ruleR3_aCancelledLargeOperationReleasesItsReservationAtOnce() throws {
        var h = Harness()
        try h.join("w", slots: 4, cpus: 4)
        try h.submit([op("s1"), op("s2")])
        try h.submit([sized(op("big"), cpus: 4), op("t1")])
        #expect(h.dispatchOrder == ["s1", "s2"])
        _ = h.take()
        try h.cancel("big")
        #expect(h.take() == ["journal cancel big", "big finished cancelled", "dispatch t1→w", "t1 dispatched"])
    }

    @Test func ruleR3_anOperationLargerThanEveryWorkerReservesNothing() throws {
        var h = Harness()
        try h.join("w", slots: 4, cpus: 4)
        try h.submit([sized(op("huge"), cpus: 5), op("a"), op("b")])
        #expect(h.dispatchOrder == ["a", "b"])
    }

    @Test func ruleR3_aDrainingWorkerIsNotReservedSoItCannotHoldTheReservationFromOneThatTakesWork() throws {
        var h = Harness()
        try h.join("draining", slots: 4, cpus: 8)
        try h.join("w", slots: 4, cpus: 4)
        try h.submit([op("s1"), op("s2"), op("s3"), op("s4"), op("s5"), op("s6"), op("s7"), op("s8")])
        h.core.workerJoined("draining", slots: 0, cpus: 8, holding: h.dispatchOrder.filter { h.held[$0]?.worker == "draining" }
            .map { Scheduler.HeldAttempt(h.id($0), attempt: 1) }, at: h.time)
        try h.step()
        try h.submit([sized(op("big"), cpus: 4), op("t1")])
        for name in h.dispatchOrder.filter({ h.held[$0]?.worker == "w" }) { try h.complete(name) }
        #expect(h.dispatchOrder.last == "big" && h.held["big"]?.worker == "w")
    }

    // MARK: R4: priority order still holds

    @Test func ruleR4_aHigherPrioritySmallOperationStillGoesBeforeAWaitingLargeOne() throws {
        var h = Harness()
        try h.join("w", slots: 4, cpus: 4)
        try h.submit([op("s1"), op("s2")])
        try h.submit([sized(op("big"), cpus: 4)])
        try h.submit([op("urgent", priority: .veryHigh), op("later")])
        #expect(h.dispatchOrder == ["s1", "s2", "urgent"])
        try h.complete("s1")
        try h.complete("s2")
        try h.complete("urgent")
        #expect(h.dispatchOrder == ["s1", "s2", "urgent", "big"])
    }

    @Test func ruleR4_eachQueuesFirstLargeOperationReservesItsOwnWorker() throws {
        var h = Harness()
        try h.join("wa", slots: 2, cpus: 2, queues: ["a"])
        try h.join("wb", slots: 2, cpus: 2, queues: ["b"])
        try h.submit([op("a1", queue: "a"), op("b1", queue: "b")])
        try h.submit([sized(op("bigA", queue: "a"), cpus: 2), sized(op("bigB", queue: "b"), cpus: 2),
                      op("a2", queue: "a"), op("b2", queue: "b")])
        #expect(h.dispatchOrder == ["a1", "b1"])
        try h.complete("b1")
        try h.complete("a1")
        #expect(h.dispatchOrder == ["a1", "b1", "bigB", "bigA"])
    }
}
