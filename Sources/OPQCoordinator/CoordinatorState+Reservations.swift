import OPQCore
import OPQWire

/// Reservations end with the client that made them: each open reservation (OPQCore's `Reservations`)
/// holds a *lease*, ``CoordinatorConfiguration/reservationLease`` seconds from when it was handed out
/// or last renewed (`RenewReservations`; the client library sends one every third of the lease for all
/// it holds). A reservation whose lease ran out is given up exactly as an explicit cancel of it would:
/// journaled `.cancelled`, its dependants go on as if it finished `cancelled` — so a program killed with
/// SIGKILL does not leave the operations that waited for its unsubmitted ones waiting forever.
///
/// Leases are not journaled: a restarted coordinator gives every reservation it recovered a full lease
/// from its first turn (the clients reconnect and renew meanwhile), never expiring them all at once.
struct ReservationLeases {
    /// When each leased reservation runs out (loop clock, seconds). A reservation that ended otherwise
    /// (taken up, given up) is dropped at the next check.
    var deadlines: [OperationID: Double] = [:]
    /// No lease runs out before this (a lower bound: renewals only push deadlines later); 0 at start, so
    /// the first turn leases the reservations recovered from the journal.
    var nextCheck = 0.0
}

extension CoordinatorState {
    /// Hands out `count` reservations, each with a full lease from `now`; replies with them and the lease.
    mutating func reserve(_ count: Int, now: Double) throws(RequestError) -> [OperationID] {
        let ids = try core.reserve(count, at: now)
        let until = now + configuration.reservationLease
        for id in ids { leases.deadlines[id] = until }
        leases.nextCheck = min(leases.nextCheck, until)
        return ids
    }

    /// Renews the leases of the open reservations among `ids`; returns the others (no longer open).
    mutating func renewReservations(_ ids: [OperationID], now: Double) -> [OperationID] {
        var gone: [OperationID] = []
        let until = now + configuration.reservationLease
        for id in ids {
            if core.isOpenReservation(id) { leases.deadlines[id] = until } else { gone.append(id) }
        }
        return gone
    }

    /// Gives up every reservation whose lease ran out by `now` (journaled as a cancel of it), leases
    /// the open reservations that have none (recovered from the journal), and forgets the leases of
    /// reservations that ended otherwise. Cheap unless a lease may have run out.
    mutating func expireReservations(now: Double) {
        guard now >= leases.nextCheck else { return }
        var next = now + configuration.reservationLease
        var expired: [OperationID] = []
        var leased: [OperationID: Double] = [:]
        for id in core.openReservations {
            let until = leases.deadlines[id] ?? now + configuration.reservationLease
            if until <= now {
                expired.append(id)
            } else {
                leased[id] = until
                next = min(next, until)
            }
        }
        leases.deadlines = leased
        leases.nextCheck = next
        guard let first = expired.first else { return }
        logger.info("reservations given up: their lease ran out (the client that made them is gone)", metadata: [
            "reservations": "\(expired.count)", "first": "\(first)", "lease.seconds": "\(configuration.reservationLease)",
        ])
        for id in expired { _ = try? core.cancel(id, at: now) }
    }
}

extension CoordinatorState {
    /// The refusal of a request about operation `id` that the core does not have. An open reservation
    /// (`op-rN`) is not an operation yet: the refusal says so and names what waits for it, so `opq show
    /// op-rN` explains instead of calling it unknown.
    func unknownOperation(_ id: OperationID) -> Opq_V1_Error {
        var error = Opq_V1_Error(RequestError.unknownOperation(id))
        if let dependants = core.reservedDependants(of: id) {
            let waiting = dependants.isEmpty ? "nothing waits for it yet"
                : (dependants.count == 1 ? "1 operation waits" : "\(dependants.count) operations wait") + " for it: "
                    + dependants.prefix(10).map(\.description).joined(separator: " ") + (dependants.count > 10 ? " …" : "")
            error.message = """
                \(id) is a reservation, not an operation yet: a client program holds it for an operation it will add \
                later (\(waiting)); it has no state or output until then. 'opq cancel \(id)' gives it up: what waits \
                for it goes on as if it finished cancelled
                """
        }
        return error
    }
}
