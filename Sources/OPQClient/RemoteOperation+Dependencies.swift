import Foundation
import OPQCore
import OPQWire

extension RemoteOperation {
    /// The operations this one depends on, in the order they were added (Foundation's `dependencies`).
    public var dependencies: [RemoteOperation] { condition.withLock { dependencyList } }

    /// Makes this operation wait until `operation` has finished (any outcome, unless ``requires`` is
    /// `.success`). Works before and after either was added to a queue, across queues:
    ///
    /// - neither added yet: recorded, sent with the submission;
    /// - this one added, `operation` too: the coordinator adds the edge (a `pending` or `ready` operation
    ///   waits again; once dispatched it has no effect);
    /// - this one added, `operation` not yet: this one waits until `operation` is added and has
    ///   finished (Foundation's rule for a dependency not yet in a queue). The coordinator holds the
    ///   edge on a *reservation* for `operation` (an id `op-rN`, not its ``id``, which stays nil until it
    ///   is added); adding `operation` turns it into an ordinary edge, and a cycle it would close makes
    ///   that add throw, changing nothing. If this program closes its connection without adding
    ///   `operation`, this one stops waiting as if `operation` had finished `cancelled`.
    ///
    /// Adding the same dependency twice changes nothing.
    /// - Throws: the coordinator's refusal, e.g. ``ClientError/refused(_:)`` with code `cycle` naming
    ///   the cycle's members (also, at once, for the operation itself), `unknownDependency` for an
    ///   operation added through another coordinator; then nothing changed.
    public func addDependency(_ operation: RemoteOperation) throws(ClientError) {
        if operation === self { throw selfDependencyRefusal }
        let placed: Placement? = condition.withLock {
            guard !dependencyList.contains(where: { $0 === operation }) else { return nil }
            if placement == nil { dependencyList.append(operation) }
            return placement
        }
        guard let placed else { return }
        if let refusal = foreignDependencyRefusal(on: operation, coordinator: placed.coordinator) { throw refusal }
        try placed.coordinator.addDependency(of: self, on: operation)
        condition.withLock { if !dependencyList.contains(where: { $0 === operation }) { dependencyList.append(operation) } }
    }

    /// Removes a dependency. After this operation was added, the coordinator drops the edge, and the
    /// operation becomes ready when its last unfinished dependency is gone (Apple's documented rule).
    /// - Throws: the coordinator's refusal; then nothing changed.
    public func removeDependency(_ operation: RemoteOperation) throws(ClientError) {
        let placed: Placement? = condition.withLock {
            guard dependencyList.contains(where: { $0 === operation }) else { return nil }
            if placement == nil { dependencyList.removeAll { $0 === operation } }
            return placement
        }
        guard let placed else { return }
        try placed.coordinator.removeDependency(of: self, on: operation)
        condition.withLock { dependencyList.removeAll { $0 === operation } }
    }

    /// Cancels the operation (Foundation's `cancel()`): ``isCancelled`` turns true at once, and the
    /// coordinator is told without waiting for its answer. Not started yet: it finishes `cancelled` at
    /// once without running; running: the worker stops it (SIGTERM, then SIGKILL; a handler sees
    /// `isCancelled`); finished: nothing changes. Cancelling before adding it to a queue makes it finish
    /// `cancelled`, without running, as soon as it is added.
    public func cancel() {
        let placed: Placement? = condition.withLock {
            guard status.state != .finished else { return nil }
            status.isCancelled = true
            return placement
        }
        guard let placed else { return }
        placed.coordinator.sendAndForget(for: self) { $0.cancel.operation = placed.id.rawValue }
    }

    /// The captured output of its last attempt (bounded tails kept by the coordinator).
    /// - Throws: ``ClientError/notSubmitted(operation:)`` before it was added; a transport error.
    public func output() throws(ClientError) -> CapturedOutput {
        guard let placed = condition.withLock({ placement }) else { throw .notSubmitted(operation: description) }
        let (reply, raw) = try placed.coordinator.request(timeout: placed.coordinator.requestTimeout) {
            $0.getOperation.operation = placed.id.rawValue
            $0.getOperation.includeOutput = true
        }
        let info = reply.operation
        func tail(_ output: Opq_V1_OutputTail) -> [UInt8] {
            output.frame >= 1 && Int(output.frame) <= raw.count ? raw[Int(output.frame) - 1] : []
        }
        return CapturedOutput(standardOutput: tail(info.stdout), standardError: tail(info.stderr),
                              standardOutputTotal: Int(info.stdout.totalBytes),
                              standardErrorTotal: Int(info.stderr.totalBytes))
    }

    // MARK: Submission bookkeeping

    /// Claims the operation for a submission; false if a queue already has it.
    func claim() -> Bool {
        condition.withLock {
            defer { isClaimed = true }
            return !isClaimed
        }
    }

    /// Gives the claim back (the submission was refused).
    func unclaim() { condition.withLock { isClaimed = false } }

    /// What a submission needs, read at once.
    var submissionView: (definition: Definition, dependencies: [RemoteOperation], isCancelled: Bool) {
        condition.withLock { (definition, dependencyList, status.isCancelled) }
    }

    /// Becomes the client-side handle of an operation another client added (from a listing).
    func adopt(_ info: Opq_V1_OperationInfo, coordinator: RemoteCoordinator) {
        condition.withLock {
            definition.name = info.name
            definition.priority = info.queuePriority
            definition.qualityOfService = OPQCore.QualityOfService(info.qos)
            definition.requires = Requirement(info.requires)
            definition.isBarrier = info.barrier
            definition.labels = info.labels
            if info.hasTimeoutSeconds { definition.timeout = info.timeoutSeconds }
            isClaimed = true
            placement = Placement(id: info.operationID, job: JobID(info.job), queue: info.queue, coordinator: coordinator)
        }
    }
}

/// The captured output of an attempt: the tails the worker kept, and how much was produced in all.
public struct CapturedOutput: Sendable, Hashable {
    /// The tail of standard output (all of it when it was small).
    public var standardOutput: [UInt8]
    /// The tail of standard error.
    public var standardError: [UInt8]
    /// Bytes written to standard output in all (more than the tail = truncated).
    public var standardOutputTotal: Int
    /// Bytes written to standard error in all.
    public var standardErrorTotal: Int

    /// Standard output as text (invalid UTF-8 repaired).
    public var standardOutputText: String { String(decoding: standardOutput, as: UTF8.self) }
    /// Standard error as text (invalid UTF-8 repaired).
    public var standardErrorText: String { String(decoding: standardError, as: UTF8.self) }
}
