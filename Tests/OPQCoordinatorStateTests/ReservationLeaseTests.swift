import OPQCore
@testable import OPQCoordinator
@testable import OPQJournal
import OPQWire
import Testing

/// Reservations end with the client that made them (``ReservationLeases``): a lease renewed by the
/// client, given up like an explicit cancel when it runs out, journaled, and a full lease again after a
/// restart. Message sequences in, exact actions out, time injected.
@Suite struct ReservationLeaseTests {
    /// Reserves one id for client `client` (request `id`) and returns it.
    static func reserve(_ d: inout StateDriver, _ id: UInt64, client: String = "alice") throws -> OperationID {
        _ = try d.client(client, id) { $0.reserve.count = 1 }
        let lines = d.turn()
        let reservation = try #require(d.state.core.openReservations.last)
        #expect(lines.contains("reply \(client) \(id) reserved [\(reservation)] lease \(d.state.configuration.reservationLease)"), "\(lines)")
        return reservation
    }

    /// Submits "strict" (`requires: success`) and "tolerant", both depending on `reservation`.
    static func submitDependants(_ d: inout StateDriver, _ id: UInt64, on reservation: OperationID) throws {
        let specs = [("strict", Requirement.success), ("tolerant", .any)].map { name, requires in
            OperationSpec(name: name, work: .command(Command(["/bin/true"])), dependencies: [.id(reservation)], requires: requires)
        }
        _ = try d.client("bob", id) { $0.submit = Opq_V1_Submit(Submission(specs), idempotencyKey: "") }
        _ = d.turn()
        #expect(d.state.core.reservedDependants(of: reservation) == [OperationID(1), OperationID(2)])
    }

    @Test func aReservationNobodyRenewsIsGivenUpWhenItsLeaseRunsOutAsIfCancelled() throws {
        var d = StateDriver(reservationLease: 30)
        let reservation = try Self.reserve(&d, 1)
        try Self.submitDependants(&d, 2, on: reservation)
        #expect(d.turn(at: 129.9) == ["commit", "wake at 130.0"], "nothing happens before the lease runs out")
        #expect(d.turn(at: 130) == [
            "journal the cancel of op-r1", "journal the finish of op-1 (cancelled)", "commit", "wake at 131.0",
        ])
        #expect(d.state.core.reservedDependants(of: reservation) == nil)
        #expect(d.state.core.operation(OperationID(1))?.outcome == .cancelled, "requires: success is cancelled")
        #expect(d.state.core.operation(OperationID(2))?.state == .ready, "Foundation's rule: the other goes on")
        // Gone, as after an explicit give-up: a renewal says so, a cancel of it is refused.
        #expect(try d.client("alice", 3) { $0.renewReservations.ids = [reservation.rawValue] } == [])
        #expect(d.turn(at: 131).contains("reply alice 3 renewed, gone [op-r1] lease 30.0"))
    }

    @Test func renewalsKeepReservationsOpenAndNameTheOnesThatAreGone() throws {
        var d = StateDriver(reservationLease: 30)
        let first = try Self.reserve(&d, 1)
        let second = try Self.reserve(&d, 2)
        try Self.submitDependants(&d, 3, on: first)
        d.now = 120
        #expect(try d.client("alice", 4) { $0.renewReservations.ids = [first.rawValue, second.rawValue, OperationID.reservation(99).rawValue] } == [])
        #expect(d.turn() == ["commit", "reply alice 4 renewed, gone [op-r99] lease 30.0", "wake at 121.0"])
        // Past the first lease (130), within the renewed one (150): nothing is given up.
        #expect(d.turn(at: 149) == ["commit", "wake at 150.0"])
        #expect(d.state.core.isOpenReservation(first) && d.state.core.isOpenReservation(second))
        // An explicit give-up of one; the other runs out at 150.
        _ = try d.client("alice", 5) { $0.cancel.operation = second.rawValue }
        #expect(d.turn(at: 149.5) == ["journal the cancel of op-r2", "commit", "reply alice 5 cancelled [\(second.rawValue)]", "wake at 150.0"])
        #expect(d.turn(at: 150) == ["journal the cancel of op-r1", "journal the finish of op-1 (cancelled)", "commit", "wake at 151.0"])
    }

    @Test func aTakenUpReservationNeedsNoLeaseAndIsNeverGivenUp() throws {
        var d = StateDriver(reservationLease: 30)
        let reservation = try Self.reserve(&d, 1)
        try Self.submitDependants(&d, 2, on: reservation)
        var awaited = OperationSpec(name: "awaited", work: .command(Command(["/bin/true"])))
        awaited.reservation = reservation
        _ = try d.client("alice", 3) { $0.submit = Opq_V1_Submit(Submission([awaited]), idempotencyKey: "") }
        #expect(d.turn().first == "journal the submission of job-2 (op-3)")
        #expect(!d.state.core.isOpenReservation(reservation))
        #expect(d.turn(at: 200) == ["commit", "wake at 201.0"], "no give-up of a reservation taken up")
        #expect(d.state.leases.deadlines.isEmpty)
    }

    /// The lease is not journaled, the give-up is: a replay of the journaled records agrees with the state,
    /// and a restarted coordinator gives the reservations it recovered a full lease from its first turn
    /// (its loop clock starts anywhere), never expiring them at once.
    @Test func theGiveUpIsJournaledAndARestartGivesRecoveredReservationsAFullLease() throws {
        var d = StateDriver(reservationLease: 30)
        var journal: [JournalEntry] = []
        func turn(_ time: Double) {
            d.now = time
            d.state.tick(now: time)
            for action in d.state.finishTurn(now: time) {
                if case .journal(let entry) = action { journal.append(entry) }
                if case .commit = action { d.state.committed() }
            }
        }
        _ = try d.client("alice", 1) { $0.reserve.count = 2 }
        turn(100)
        let (kept, lost) = (OperationID.reservation(1), OperationID.reservation(2))
        let specs = [kept, lost].map { reservation in
            OperationSpec(name: "after \(reservation)", work: .command(Command(["/bin/true"])), dependencies: [.id(reservation)], requires: .success)
        }
        _ = try d.client("bob", 2) { $0.submit = Opq_V1_Submit(Submission(specs), idempotencyKey: "") }
        turn(110)
        _ = try d.client("alice", 3) { $0.renewReservations.ids = [kept.rawValue] }
        turn(125)
        turn(130)  // `lost` ran out
        #expect(journal.map(\.summary).suffix(2) == ["the cancel of op-r2", "the finish of op-2 (cancelled)"])

        // A restart: the journal replayed into a fresh core, a state whose clock starts elsewhere.
        var core = Scheduler(configuration: Scheduler.Configuration())
        for entry in journal { if let record = entry.record { try core.replay(record, at: 0) } }
        _ = core.takeEffects()  // as recovery does: they happened before
        #expect(core.openReservations == [kept])
        #expect(core.operation(OperationID(2))?.outcome == .cancelled)
        var restarted = StateDriver(reservationLease: 30)
        restarted.state.core = core
        restarted.now = 7
        #expect(restarted.turn() == ["commit", "wake at 8.0"], "not expired at once: a full lease from the first turn")
        #expect(restarted.turn(at: 36.5) == ["commit", "wake at 37.0"])
        // Its client reconnects and renews: from then on the lease counts from the renewal.
        _ = try restarted.client("alice", 1) { $0.renewReservations.ids = [kept.rawValue] }
        #expect(restarted.turn().contains("reply alice 1 renewed, gone [] lease 30.0"))
        #expect(restarted.turn(at: 66) == ["commit", "wake at 66.5"])
        #expect(restarted.turn(at: 66.5) == [
            "journal the cancel of op-r1", "journal the finish of op-1 (cancelled)", "journal the end of job-1", "commit", "wake at 67.5",
        ])
    }
}
