import Foundation
import OPQCore
import OPQWire

// Submitting RemoteOperations, and "gates": how an operation waits for one that was not added to any
// queue yet (Foundation allows that; the coordinator only knows accepted operations).
//
// A gate is an empty operation in the suspended queue `gateQueue`; it never runs. The dependant is
// submitted depending on its gate, so it stays pending. When the awaited operation is accepted, the
// client adds the real edge (dependant → it) and then cancels the gate, which finishes at once and no
// longer holds the dependant. An operation cancelled before it was added is submitted behind a gate too,
// then cancelled before the gate is, so it finishes `cancelled` without ever being dispatched.

extension RemoteCoordinator {
    /// The suspended queue that holds gates. It shows in `opq list`; its operations are all empty.
    public static let gateQueue = "opq-client-gates"

    /// A dependant held by a gate until the gate's target is accepted.
    struct Gate {
        let dependant: RemoteOperation
        let gate: OperationID
    }

    /// The gates waiting for one target (kept alive here: it may be added later).
    struct GateList {
        let target: RemoteOperation
        var gates: [Gate] = []
    }

    /// What to send for one batch, and which gates it contains.
    struct Batch {
        var specs: [OperationSpec] = []
        /// Gates at positions `operations.count...`: the dependant's position and the awaited operation
        /// (nil = the dependant was cancelled before it was added).
        var gates: [(dependant: Int, target: RemoteOperation?)] = []
        var preCancelled = Set<Int>()

        init(_ operations: [RemoteOperation], queue: String) {
            var positions: [ObjectIdentifier: Int] = [:]
            for (k, operation) in operations.enumerated() { positions[ObjectIdentifier(operation)] = k }
            let views = operations.map(\.submissionView)
            var referenced = Set<Int>()
            for view in views {
                for dependency in view.dependencies { if let j = positions[ObjectIdentifier(dependency)] { referenced.insert(j) } }
            }
            // Dependencies inside the batch go by name; an unnamed operation that is referred to gets one.
            let names = views.enumerated().map { k, view in
                view.definition.name.isEmpty && referenced.contains(k) ? "#\(k + 1)" : view.definition.name
            }
            for (k, view) in views.enumerated() {
                let definition = view.definition
                var references: [DependencyReference] = []
                for dependency in view.dependencies {
                    if let j = positions[ObjectIdentifier(dependency)] {
                        references.append(.name(names[j]))
                    } else if let id = dependency.id {
                        references.append(.id(id))
                    } else {
                        references.append(addGate(for: k, target: dependency))
                    }
                }
                if view.isCancelled {
                    preCancelled.insert(k)
                    references.append(addGate(for: k, target: nil))
                }
                specs.append(OperationSpec(
                    name: names[k], queue: queue, work: definition.work, dependencies: references,
                    priority: definition.priority, qualityOfService: definition.qualityOfService,
                    requires: definition.requires, retries: definition.retries, timeout: definition.timeout,
                    labels: definition.labels, isBarrier: definition.isBarrier))
            }
            specs += gates.indices.map { RemoteCoordinator.gateSpec(named: "#gate\($0 + 1)") }
        }

        private mutating func addGate(for dependant: Int, target: RemoteOperation?) -> DependencyReference {
            gates.append((dependant, target))
            return .name("#gate\(gates.count)")
        }

        var submission: Submission { RemoteCoordinator.gated(specs, gates: gates.count) }
    }

    static func gateSpec(named name: String) -> OperationSpec {
        OperationSpec(name: name, queue: gateQueue, work: .empty)
    }

    /// A submission of `specs`, which hold `gates` gates: it (re)suspends the gate queue atomically.
    static func gated(_ specs: [OperationSpec], gates: Int) -> Submission {
        Submission(specs, queueSettings: gates == 0 ? [] : [(gateQueue, QueueSettings(isSuspended: true))])
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

    /// Submits `operations` to `queue` as one job: accepted whole (every operation bound to its id and
    /// tracked before any later event is applied) or refused whole (none of them added).
    func submit(_ operations: [RemoteOperation], queue: String) throws(ClientError) {
        var claimed: [RemoteOperation] = []
        for operation in operations {
            guard operation.claim() else {
                for done in claimed { done.unclaim() }
                throw .alreadyAdded(operation: operation.description)
            }
            claimed.append(operation)
        }
        var draft = Batch(operations, queue: queue)
        // The operations already accepted that wait (behind a gate) for one of these get their edge in the
        // submission itself: a cycle it closes refuses the whole batch, and nothing changes (SEMANTICS §9).
        let folded = waitingGates(for: operations)
        for (k, carried) in folded.enumerated() { draft.specs[k].dependants = carried.compactMap { $0.dependant.id } }
        let batch = draft
        submissionWillSend()
        let ids: [OperationID]
        // One key for this batch: a submit retried after a timeout (the coordinator slow, or restarting
        // from its journal) returns the first acceptance instead of adding the batch twice.
        let key = "opq-client-" + UUID().uuidString
        do {
            ids = try Self.retryingTimeouts(Self.submitAttempts) { () throws(ClientError) in
                try request(timeout: requestTimeout, onLoop: { [self] reply in
                    let ids = reply.submitted.operationIDs
                    let job = reply.submitted.jobID
                    let accepted = operations.enumerated().map { k, operation in
                        operation.bind(RemoteOperation.Placement(id: ids[k], job: job, queue: queue, coordinator: self))
                        return (operation, ids[k])
                    }
                    submissionDidEnd(accepted: accepted)
                }) { $0.submit = Opq_V1_Submit(batch.submission, idempotencyKey: key) }.reply.submitted.operationIDs
            }
        } catch {
            submissionDidEnd(accepted: [])
            for operation in operations { operation.unclaim() }
            throw error
        }
        try settleGates(batch, operations: operations, ids: ids, folded: folded)
    }

    /// The gates of accepted dependants waiting for each of `operations`, at this moment.
    private func waitingGates(for operations: [RemoteOperation]) -> [[Gate]] {
        lock.withLock {
            operations.map { operation in
                (gates[ObjectIdentifier(operation)]?.gates ?? []).filter { $0.dependant.id != nil }
            }
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

    /// After a batch was accepted: registers its gates, cancels what was cancelled before it was
    /// accepted, and releases the operations that were waiting for the batch's operations.
    /// `folded`: per operation, the gates whose edge the batch carried (``waitingGates(for:)``).
    private func settleGates(_ batch: Batch, operations: [RemoteOperation], ids: [OperationID], folded: [[Gate]]) throws(ClientError) {
        for (g, gate) in batch.gates.enumerated() {
            let gateID = ids[operations.count + g]
            let dependant = operations[gate.dependant]
            if let target = gate.target {
                try hold(dependant, until: target, gate: gateID)
            } else {
                // In this order: the dependant is still pending behind its gate when it is cancelled.
                loop.send({ $0.cancel.operation = ids[gate.dependant].rawValue }, handler: { _ in })
                cancelGate(gateID)
            }
        }
        for (k, operation) in operations.enumerated() where !batch.preCancelled.contains(k) && operation.isCancelled {
            loop.send({ $0.cancel.operation = ids[k].rawValue }, handler: { _ in })  // cancelled while in flight
        }
        var firstError: ClientError?
        for (k, carried) in folded.enumerated() where !carried.isEmpty {
            let removedMeanwhile: [Gate] = lock.withLock {
                let key = ObjectIdentifier(operations[k])
                let present = Set(gates[key]?.gates.map(\.gate) ?? [])
                gates[key]?.gates.removeAll { gate in carried.contains { $0.gate == gate.gate } }
                if gates[key]?.gates.isEmpty == true { gates[key] = nil }
                return carried.filter { !present.contains($0.gate) }
            }
            for gate in carried { cancelGate(gate.gate) }
            // A removeDependency while the batch was in flight: the edge the batch added goes again.
            for gate in removedMeanwhile {
                guard let dependant = gate.dependant.id else { continue }
                do { try changeEdge(adding: false, dependant, on: ids[k]) } catch { firstError = firstError ?? error }
            }
        }
        for operation in operations {
            do { try releaseGates(waitingFor: operation) } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }

    /// Keeps `dependant` behind `gate` until `target` is accepted.
    func hold(_ dependant: RemoteOperation, until target: RemoteOperation, gate: OperationID) throws(ClientError) {
        lock.withLock { gates[ObjectIdentifier(target), default: GateList(target: target)].gates.append(Gate(dependant: dependant, gate: gate)) }
        if target.id != nil { try releaseGates(waitingFor: target) }  // it was accepted meanwhile
    }

    /// `target` was accepted: adds the real edges of the operations waiting for it, then opens their gates.
    func releaseGates(waitingFor target: RemoteOperation) throws(ClientError) {
        guard let targetID = target.id, let list = lock.withLock({ gates.removeValue(forKey: ObjectIdentifier(target)) }) else { return }
        var firstError: ClientError?
        for gate in list.gates {
            if let dependant = gate.dependant.id {
                do {
                    try changeEdge(adding: true, dependant, on: targetID)
                } catch {
                    firstError = firstError ?? error  // e.g. a cycle: the dependant is released anyway
                }
            }
            cancelGate(gate.gate)
        }
        if let firstError { throw firstError }
    }

    /// Opens a gate: cancelling the never-dispatched empty operation finishes it at once.
    func cancelGate(_ gate: OperationID) {
        loop.send({ $0.cancel.operation = gate.rawValue }, handler: { _ in })
    }

    // MARK: Dependencies after submission

    /// Adds `dependant → dependency` where `dependant` was accepted.
    func addDependency(of dependant: RemoteOperation, on dependency: RemoteOperation) throws(ClientError) {
        guard let dependantID = dependant.id else { throw .notSubmitted(operation: dependant.description) }
        if let dependencyID = dependency.id { return try changeEdge(adding: true, dependantID, on: dependencyID) }
        // The dependency is not in any queue yet: a gate holds the dependant until it is, the gate and
        // its edge added in one submission (all or nothing).
        var gate = RemoteCoordinator.gateSpec(named: "gate")
        gate.dependants = [dependantID]
        let gateID = try request(timeout: requestTimeout) {
            $0.submit = Opq_V1_Submit(RemoteCoordinator.gated([gate], gates: 1))
        }.reply.submitted.operationIDs[0]
        try hold(dependant, until: dependency, gate: gateID)
    }

    /// Removes `dependant → dependency` where `dependant` was accepted.
    func removeDependency(of dependant: RemoteOperation, on dependency: RemoteOperation) throws(ClientError) {
        guard let dependantID = dependant.id else { throw .notSubmitted(operation: dependant.description) }
        if let dependencyID = dependency.id { return try changeEdge(adding: false, dependantID, on: dependencyID) }
        let opened: [Gate] = lock.withLock {
            guard var list = gates[ObjectIdentifier(dependency)] else { return [] }
            let opened = list.gates.filter { $0.dependant === dependant }
            list.gates.removeAll { $0.dependant === dependant }
            gates[ObjectIdentifier(dependency)] = list.gates.isEmpty ? nil : list
            return opened
        }
        for gate in opened { cancelGate(gate.gate) }
    }
}
