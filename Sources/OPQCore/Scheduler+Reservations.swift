/// Reservations: forward dependencies on operations not submitted yet (Foundation lets an operation
/// depend on one that no queue has yet).
///
/// A client asks for reservations (``Scheduler/reserve(_:at:)``) for operations it has not submitted;
/// accepted operations may then depend on a reservation (``Scheduler/addDependency(_:on:at:)``, or a
/// submission's dependency by id). Such a *forward edge* holds its dependant `pending` like an edge onto
/// an unfinished operation. Exactly one of two things ends a reservation:
///
/// - **a submission takes it up** (``OperationSpec/reservation``): every forward edge becomes an edge
///   onto the new operation, atomically with the submission; a cycle this closes refuses the whole
///   submission, and nothing changes (SEMANTICS §9);
/// - **it is given up** (``Scheduler/cancel(_:at:)`` on the reservation id; the client library does this
///   for the reservations of a connection it closes): it counts as an operation that finished
///   `cancelled` — each forward edge is satisfied (Foundation's rule), and a `requires: success`
///   dependant is cancelled (`dependency failed`).
///
/// A reservation taken up or given up is gone: a later submission under it, or an edge onto it, is
/// refused as an unknown dependency. A dependant cancelled meanwhile simply finishes; its forward edge
/// is dropped when the reservation ends. Reservations, forward edges and their ends are journaled
/// (`.reserved`, `.dependency`, the `.submitted` that takes one up, `.cancelled`), so a restarted
/// coordinator keeps them; a journal compaction that replaces a pruned job's submission by its
/// tombstone keeps the take-ups it carried (``restorePrunedTakeUp(_:by:at:)``).
///
/// The core keeps no clock for them: the coordinator gives a reservation up when its client stops
/// renewing its lease (OPQCoordinator's `ReservationLeases`), through ``cancel(_:at:)``.
struct Reservations: Sendable {
    /// Open reservations by number: the dependants (operation indexes) with a forward edge onto each,
    /// in the order the edges were added, each at most once.
    var open: [UInt64: [Int]] = [:]
    /// Reservations handed out so far (numbers `1...handedOut`).
    var handedOut: UInt64 = 0

    /// Forward edges per dependant (what each adds to `unfinishedDependencies`); for invariant checks.
    /// - Complexity: O(forward edges).
    var edgesPerDependant: [Int: UInt32] {
        var count: [Int: UInt32] = [:]
        for dependants in open.values { for index in dependants { count[index, default: 0] += 1 } }
        return count
    }
}

extension Limits {
    /// Most reservations handed out by one request.
    public static let maxReservations = 65_536
    /// How long a reservation lasts unless its client renews it (the coordinator's default lease;
    /// `opq-coordinator --reservation-lease`).
    public static let defaultReservationLease = 30.0
    /// The leases a coordinator may be configured with, in seconds.
    public static let reservationLeaseRange: ClosedRange<Double> = 1...86_400

    /// Why `seconds`, given as `name` (a flag, a setting), is not a valid reservation lease, or nil.
    public static func reservationLeaseProblem(_ seconds: Double, name: String) -> String? {
        reservationLeaseRange.contains(seconds) ? nil : "\(name) must be a number of seconds from \(Int(reservationLeaseRange.lowerBound)) to \(Int(reservationLeaseRange.upperBound)), not \(seconds)"
    }
}

extension Scheduler {
    /// Hands out `count` reservations: ids for operations the caller will submit later (see
    /// ``Reservations``). Journaled.
    /// - Throws: ``RequestError/invalidReservationCount(_:)`` for a count outside 1...``Limits/maxReservations``.
    public mutating func reserve(_ count: Int, at time: Timestamp) throws(RequestError) -> [OperationID] {
        now = time
        guard count >= 1, count <= Limits.maxReservations,
              reservations.handedOut + UInt64(count) <= OperationID.maxReservationNumber else { throw .invalidReservationCount(count) }
        let first = reservations.handedOut + 1
        reservations.handedOut += UInt64(count)
        for number in first...reservations.handedOut { reservations.open[number] = [] }
        effects.append(.journal(.reserved(first: OperationID.reservation(first), count: count)))
        return (first...reservations.handedOut).map { OperationID.reservation($0) }
    }

    /// The number of `id` if it is an open reservation, else nil.
    func openReservation(_ id: OperationID) -> UInt64? {
        guard id.isReservation else { return nil }
        let number = id.rawValue - OperationID.reservationBase
        return reservations.open[number] != nil ? number : nil
    }

    /// Whether `id` is an open reservation: handed out, neither taken up nor given up yet.
    public func isOpenReservation(_ id: OperationID) -> Bool { openReservation(id) != nil }

    /// The open reservations, in the order they were handed out (the coordinator keeps their leases).
    /// - Complexity: O(open reservations × log).
    public var openReservations: [OperationID] { reservations.open.keys.sorted().map { OperationID.reservation($0) } }

    /// The dependants waiting on reservation `id`, or nil when it is not open (for queries and tests).
    public func reservedDependants(of id: OperationID) -> [OperationID]? {
        openReservation(id).map { reservations.open[$0]!.map(self.id) }
    }

    /// The open reservations operation `index` depends on, by number.
    /// - Complexity: O(forward edges).
    func reservations(awaitedBy index: Int) -> [OperationID] {
        guard !reservations.open.isEmpty else { return [] }
        return reservations.open.filter { $0.value.contains(index) }.keys.sorted().map { OperationID.reservation($0) }
    }

    /// Adds the forward edge "`index` depends on reservation `number`" (new: the caller checked);
    /// a ready operation waits again.
    mutating func addForwardEdge(_ index: Int, on number: UInt64) {
        reservations.open[number]!.append(index)
        operations[index].unfinishedDependencies += 1
        if operations[index].state == .ready {
            leaveReady(index)
            setState(index, .pending)
            notify(index)
        }
    }

    /// Adds or removes the forward edge `index` → reservation `number` (``addDependency(_:on:at:)`` and
    /// ``removeDependency(_:on:at:)`` for a reservation). Returns whether anything changed.
    mutating func changeForwardEdge(_ index: Int, on reservation: OperationID, number: UInt64, adding: Bool) -> Bool {
        let present = reservations.open[number]!.contains(index)
        if adding {
            guard !present, operations[index].state <= .ready else { return false }
            effects.append(.journal(.dependency(id(index), on: reservation, added: true)))
            addForwardEdge(index, on: number)
        } else {
            guard present else { return false }
            effects.append(.journal(.dependency(id(index), on: reservation, added: false)))
            reservations.open[number]!.removeAll { $0 == index }
            if operations[index].state == .pending { forwardEdgeGone(index) }
        }
        settle()
        return true
    }

    /// Ends reservation `number` as taken up by a submission: its forward edges stop counting (the
    /// submission links each unfinished dependant to the new operation right after).
    mutating func takeUp(_ number: UInt64) {
        for index in reservations.open.removeValue(forKey: number) ?? [] where operations[index].state == .pending {
            operations[index].unfinishedDependencies -= 1
        }
    }

    /// Gives reservation `number` up: as if its operation finished `cancelled` (see ``Reservations``).
    mutating func giveUp(_ number: UInt64) {
        for index in reservations.open.removeValue(forKey: number) ?? [] where operations[index].state == .pending {
            if operations[index].requires == .success {
                operations[index].unfinishedDependencies -= 1
                enqueueFinish(index, .cancelled, .dependencyFailed)
            } else {
                forwardEdgeGone(index)
            }
        }
        settle()
    }

    /// Replays the take-up of `reservation` by `operation` of a pruned job (journal compaction keeps it in
    /// place of the job's submission): each dependant still waiting on the reservation depends on the
    /// operation instead, as the take-up made it, and goes on as for any dependency that finished with
    /// that outcome — satisfied by a success; otherwise Foundation's rule lets it run and
    /// `requires: success` cancels it (`dependency failed`).
    /// - Throws: ``RequestError/unknownOperation(_:)`` when the reservation is not open or `operation`
    ///   is not a finished operation.
    public mutating func restorePrunedTakeUp(_ reservation: OperationID, by operation: OperationID, at time: Timestamp) throws(RequestError) {
        now = time
        guard let number = openReservation(reservation) else { throw .unknownOperation(reservation) }
        guard let target = index(of: operation), operations[target].state == .finished else { throw .unknownOperation(operation) }
        let failed = operations[target].outcome != .succeeded
        for index in reservations.open.removeValue(forKey: number) ?? [] where operations[index].state == .pending {
            link(index, to: target, implicit: false)
            if failed && operations[index].requires == .success {
                operations[index].unfinishedDependencies -= 1
                enqueueFinish(index, .cancelled, .dependencyFailed)
            } else {
                forwardEdgeGone(index)
            }
        }
        settle()
    }

    /// A forward edge of pending operation `index` is gone: it becomes ready if that was its last wait.
    private mutating func forwardEdgeGone(_ index: Int) {
        operations[index].unfinishedDependencies -= 1
        if operations[index].unfinishedDependencies == 0, !operations[index].isWaitingForRetry, !operations[index].isCancelled {
            makeReady(index)
        }
    }
}
