import Foundation
import OPQCore
import OPQWire

// Submitting RemoteOperations, and forward dependencies: how an accepted operation waits for one that
// was not added to any queue yet (Foundation allows that).
//
// The coordinator hands out *reservations* (ids above 2^62, shown `op-rN`) for operations not submitted
// yet. An accepted operation that depends on such an operation depends on its reservation (a forward
// edge, kept by the coordinator's core and its journal); the submission that adds the operation takes
// the reservation up, and the forward edges become ordinary edges atomically with it: a cycle they close
// refuses the whole submission and nothing changes (SEMANTICS §9). An operation cancelled before it was
// added is submitted marked cancelled and finishes `cancelled` at once, without being dispatched.
//
// A connection that closes gives up the reservations it still holds (its operations were never added):
// their dependants go on as if the operation had finished `cancelled` — Foundation's rule lets them run,
// `requires: .success` cancels them. A program that ends without closing (killed, crashed) cannot: each
// reservation holds a lease on the coordinator (`opq-coordinator --reservation-lease`, 30 s by default),
// renewed here every third of it for all reservations held in one request; the coordinator gives up a
// reservation whose lease ran out, with the same effect. A reservation the coordinator says is gone (it
// expired while this program was stopped) is forgotten: its operation, added later, takes nothing up.

extension RemoteCoordinator {
    /// The reservation held for an operation not added to any queue yet (kept alive here: it may be
    /// added later).
    struct Reservation {
        let operation: RemoteOperation
        let id: OperationID
    }

    /// Submits `operations` to `queue` as one job: accepted whole (every operation bound to its id and
    /// tracked before any later event is applied) or refused whole (none of them added, nothing changed).
    func submit(_ operations: [RemoteOperation], queue: String) throws(ClientError) {
        var claimed: [RemoteOperation] = []
        for operation in operations {
            guard operation.claim() else {
                for done in claimed { done.unclaim() }
                throw .alreadyAdded(operation: operation.description)
            }
            claimed.append(operation)
        }
        var attempt = 1
        while true {
            do {
                return try submitClaimed(operations, queue: queue)
            } catch let error where attempt < Self.submitAttempts && forgetEndedReservation(error, submitting: operations) {
                attempt += 1  // a reservation ended meanwhile (taken up by another thread, or given up): resolve again
            } catch {
                for operation in operations { operation.unclaim() }
                throw error
            }
        }
    }

    /// One try of ``submit(_:queue:)`` for operations it claimed.
    private func submitClaimed(_ operations: [RemoteOperation], queue: String) throws(ClientError) {
        var positions: [ObjectIdentifier: Int] = [:]
        for (k, operation) in operations.enumerated() { positions[ObjectIdentifier(operation)] = k }
        let views = operations.map(\.submissionView)
        // Dependencies outside the batch: by id, or by the reservation of one not added yet.
        var outside: [RemoteOperation] = []
        for view in views {
            for dependency in view.dependencies where positions[ObjectIdentifier(dependency)] == nil && !outside.contains(dependency) {
                outside.append(dependency)
            }
        }
        let outsideIDs = try references(to: outside)
        var referenced = Set<Int>()
        for view in views {
            for dependency in view.dependencies { if let j = positions[ObjectIdentifier(dependency)] { referenced.insert(j) } }
        }
        // Dependencies inside the batch go by name; an unnamed operation that is referred to gets one.
        let names = views.enumerated().map { k, view in
            view.definition.name.isEmpty && referenced.contains(k) ? "#\(k + 1)" : view.definition.name
        }
        // From here until the reply, no reservation is made for these operations (see `references(to:)`).
        let taken: [OperationID?] = lock.withLock {
            for operation in operations { inFlight.insert(ObjectIdentifier(operation)) }
            return operations.map { reservations[ObjectIdentifier($0)]?.id }
        }
        defer {
            lock.withLock {
                for operation in operations { inFlight.remove(ObjectIdentifier(operation)) }
                lock.broadcast()
            }
        }
        var specs: [OperationSpec] = []
        specs.reserveCapacity(views.count)
        for (k, view) in views.enumerated() {
            let definition = view.definition
            let references = view.dependencies.map { dependency -> DependencyReference in
                if let j = positions[ObjectIdentifier(dependency)] { return .name(names[j]) }
                return .id(outsideIDs[outside.firstIndex(of: dependency)!])
            }
            specs.append(OperationSpec(
                name: names[k], queue: queue, work: definition.work, dependencies: references,
                priority: definition.priority, qualityOfService: definition.qualityOfService,
                requires: definition.requires, retries: definition.retries, timeout: definition.timeout,
                labels: definition.labels, isBarrier: definition.isBarrier,
                reservation: taken[k], isCancelled: view.isCancelled))
        }
        let submission = Submission(specs)
        submissionWillSend()
        // One key for this batch: a submit retried after a timeout (the coordinator slow, or restarting
        // from its journal) returns the first acceptance instead of adding the batch twice.
        let key = "opq-client-" + UUID().uuidString
        do {
            try Self.retryingTimeouts(Self.submitAttempts) { () throws(ClientError) in
                try request(timeout: requestTimeout, onLoop: { [self] reply in
                    let ids = reply.submitted.operationIDs
                    let job = reply.submitted.jobID
                    let accepted = operations.enumerated().map { k, operation in
                        operation.bind(RemoteOperation.Placement(id: ids[k], job: job, queue: queue, coordinator: self))
                        return (operation, ids[k])
                    }
                    submissionDidEnd(accepted: accepted)
                }) { $0.submit = Opq_V1_Submit(submission, idempotencyKey: key) }
            }
        } catch {
            submissionDidEnd(accepted: [])
            throw error
        }
        lock.withLock { for operation in operations { reservations[ObjectIdentifier(operation)] = nil } }
        for (k, operation) in operations.enumerated() where !views[k].isCancelled && operation.isCancelled {
            sendAndForget(for: operation) { $0.cancel.operation = operation.id!.rawValue }  // cancelled while in flight
        }
    }

    /// How many times a submit is sent (with the same idempotency key) before a timeout is thrown.
    static let submitAttempts = 3

    /// Runs `body` up to `attempts` times while it throws ``ClientError/timeout(endpoint:seconds:)``.
    static func retryingTimeouts<T>(_ attempts: Int, _ body: () throws(ClientError) -> T) throws(ClientError) -> T {
        var attempt = 1
        while true {
            do {
                return try body()
            } catch .timeout where attempt < attempts {
                attempt += 1
            }
        }
    }

    /// Whether `error` refuses a reservation that is no longer open, so the references must be resolved
    /// again: its operation was added meanwhile (by another thread), or the coordinator gave it up (a
    /// cancel of `op-rN` by anyone, or its lease ran out while this program was stopped). A reservation
    /// still held for it is forgotten: the operation, added later, takes nothing up, and what depends on
    /// it from now on gets a fresh reservation. `operations` is the batch being submitted, if any.
    func forgetEndedReservation(_ error: ClientError, submitting operations: [RemoteOperation] = []) -> Bool {
        guard let refusal = error.refusal else { return false }
        let ended: OperationID
        if refusal.code == .unknownOperation, OperationID(refusal.operation).isReservation {
            ended = OperationID(refusal.operation)
        } else if refusal.code == .unknownDependency, case .id(let id)? = refusal.reference, id.isReservation {
            ended = id
        } else if refusal.code == .invalidField, refusal.field == "reservation", let k = refusal.index, k < operations.count {
            // The operation being added carried a reservation that ended (Scheduler's submit check).
            lock.withLock { reservations[ObjectIdentifier(operations[k])] = nil }
            return true
        } else {
            return false
        }
        lock.withLock { reservations = reservations.filter { $0.value.id != ended } }
        return true
    }

    /// What the coordinator knows each of `targets` by: its id once added, else its reservation (made
    /// now, in one request, for those that have none). Waits for a submission of one of them that is in
    /// flight, so a reservation is never made for an operation whose submission could not take it up.
    func references(to targets: [RemoteOperation]) throws(ClientError) -> [OperationID] {
        var result = [OperationID?](repeating: nil, count: targets.count)
        while true {
            let held: [OperationID?] = lock.withLock {
                targets.map { target in
                    while inFlight.contains(ObjectIdentifier(target)) { lock.wait() }
                    return reservations[ObjectIdentifier(target)]?.id
                }
            }
            var missing: [Int] = []
            for (k, target) in targets.enumerated() where result[k] == nil {
                if let id = target.id { result[k] = id } else if let id = held[k] { result[k] = id } else { missing.append(k) }
            }
            if missing.isEmpty { return result.map { $0! } }
            let fresh = try reserve(missing.count)
            let spare: [OperationID] = lock.withLock {
                zip(missing, fresh).compactMap { k, id in
                    let key = ObjectIdentifier(targets[k])
                    // Its submission began meanwhile, or another thread reserved first: look again.
                    guard !inFlight.contains(key), reservations[key] == nil else { return id }
                    reservations[key] = Reservation(operation: targets[k], id: id)
                    return nil
                }
            }
            for id in spare { giveUp(id) }
        }
    }

    /// Asks the coordinator for `count` reservations, and keeps renewing their lease.
    private func reserve(_ count: Int) throws(ClientError) -> [OperationID] {
        let reply = try request(timeout: requestTimeout) { $0.reserve.count = UInt32(count) }.reply
        guard reply.reserved.ids.count == count else { throw .malformed(.missingField("Reply.reserved.ids")) }
        renewEvery(lease: reply.reserved.leaseSeconds)
        return reply.reserved.ids.map(OperationID.init)
    }

    /// Renews the reservations held every third of `lease` seconds (the coordinator's lease; 0 = none),
    /// from a timer of this connection (restarted when the lease changes, stopped when it closes).
    private func renewEvery(lease: Double) {
        let interval = lease / 3
        lock.withLock {
            guard lease > 0, !renewalClosed, renewal?.interval != interval else { return }
            renewal?.timer.cancel()
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 100)))
            timer.setEventHandler { [weak self] in self?.renewReservations() }
            timer.resume()
            renewal = (timer, interval)
        }
    }

    /// Sends one `RenewReservations` with every reservation held (nothing when none is); forgets those
    /// the coordinator says are gone.
    private func renewReservations() {
        let held = lock.withLock { reservations.values.map(\.id.rawValue) }
        guard !held.isEmpty else { return }
        loop.send({ $0.renewReservations.ids = held }) { [weak self] result in
            guard let self, case .success(let answer) = result else { return }
            let renewed = answer.reply.renewed
            if !renewed.gone.isEmpty {
                let gone = Set(renewed.gone)
                lock.withLock { reservations = reservations.filter { !gone.contains($0.value.id.rawValue) } }
            }
            renewEvery(lease: renewed.leaseSeconds)
        }
    }

    /// Stops renewing (the connection is closing).
    func stopRenewing() {
        lock.withLock {
            renewalClosed = true
            renewal?.timer.cancel()
            renewal = nil
        }
    }

    /// Gives a reservation up without waiting (its dependants go on as if it finished `cancelled`).
    private func giveUp(_ reservation: OperationID) {
        loop.send({ $0.cancel.operation = reservation.rawValue }, handler: { _ in })
    }

    /// Gives up every reservation still held, waiting (at most `timeout` seconds) until the coordinator
    /// has them: the connection is closing, so their operations will never be added through it.
    func giveUpReservations(timeout: Double) {
        stopRenewing()
        let held = lock.withLock {
            defer { reservations = [:] }
            return reservations.values.map(\.id)
        }
        guard !held.isEmpty else { return }
        let slots = held.map { reservation in
            let slot = ReplySlot()
            loop.send({ $0.cancel.operation = reservation.rawValue }, handler: { slot.fill($0) })
            return slot
        }
        let deadline = Date(timeIntervalSinceNow: timeout)
        for slot in slots { _ = slot.wait(timeout: max(0, deadline.timeIntervalSinceNow)) }
    }

    /// Adds (or removes) the edge `operation → dependency` on the coordinator.
    private func changeEdge(adding: Bool, _ operation: OperationID, on dependency: OperationID) throws(ClientError) {
        var edge = Opq_V1_DependencyEdge()
        edge.operation = operation.rawValue
        edge.dependency = dependency.rawValue
        try request(timeout: requestTimeout) {
            if adding { $0.addDependency = edge } else { $0.removeDependency = edge }
        }
    }

    // MARK: Dependencies after submission

    /// Adds `dependant → dependency` where `dependant` was accepted. A `dependency` in no queue yet is
    /// depended on through its reservation (a forward edge, which cannot close a cycle yet).
    func addDependency(of dependant: RemoteOperation, on dependency: RemoteOperation) throws(ClientError) {
        guard let dependantID = dependant.id else { throw .notSubmitted(operation: dependant.description) }
        var attempt = 1
        while true {
            do {
                return try changeEdge(adding: true, dependantID, on: references(to: [dependency])[0])
            } catch let error where attempt < Self.submitAttempts && forgetEndedReservation(error) {
                attempt += 1
            }
        }
    }

    /// Removes `dependant → dependency` where `dependant` was accepted.
    func removeDependency(of dependant: RemoteOperation, on dependency: RemoteOperation) throws(ClientError) {
        guard let dependantID = dependant.id else { throw .notSubmitted(operation: dependant.description) }
        var attempt = 1
        while true {
            let target = dependency.id ?? lock.withLock { reservations[ObjectIdentifier(dependency)]?.id }
            guard let target else { return }  // never depended on through the coordinator
            do {
                return try changeEdge(adding: false, dependantID, on: target)
            } catch let error where attempt < Self.submitAttempts && forgetEndedReservation(error) {
                attempt += 1
                lock.withLock { while inFlight.contains(ObjectIdentifier(dependency)) { lock.wait() } }
            }
        }
    }
}
