import Foundation
import OPQCore
import OPQWire

// The event stream that keeps this program's operations current (DESIGN "Client event streams"):
// one `Watch` of everything, a snapshot, then numbered events. Runs on the connection's loop thread.
//
// Ordering facts this relies on: the coordinator sends a turn's events before the turn's replies, so the
// events of a fresh submission arrive before the receipt naming their ids (they are kept in `early` while
// a submission is in flight), and a new watch's first events may arrive before its snapshot (they are
// held until the snapshot is complete).

extension RemoteCoordinator {
    /// The stream's state; guarded by ``lock``.
    struct Tracking {
        /// The request id of the current `Watch` (it names the stream's messages); 0 = none yet.
        var watch: UInt64 = 0
        /// True once the watch's snapshot is complete; stream messages before that are held.
        var synced = false
        var held: [Opq_V1_CoordinatorToClient] = []
        /// Sequence of the last event applied.
        var lastSequence: UInt64 = 0
        /// Unfinished operations of this program, by id.
        var operations: [OperationID: RemoteOperation] = [:]
        /// Submissions sent and not yet answered: while there are some, events of unknown operations
        /// are kept in ``early`` (they may be theirs).
        var submitsInFlight = 0
        var early: [OperationID: [RemoteEvent]] = [:]
        /// Subscribers of ``RemoteCoordinator/events()``.
        var streams: [Int: AsyncStream<RemoteEvent>.Continuation] = [:]
        var nextStream = 0
        /// Why the stream could not start, if it could not.
        var failure: ClientError?
        /// The connection was closed: a new ``RemoteCoordinator/events()`` sequence ends at once.
        var isClosed = false
        /// When the stream last brought a message (``checkWatch()``).
        var heard = ContinuousClock.now
        /// The coordinator instance that answered the watch (a resume is asked of that instance only).
        var instance = ""
    }

    /// Seconds without a stream message after which the watch is asked for again (``checkWatch()``).
    static let watchCheckSeconds = 5.0

    /// After ``watchCheckSeconds`` without a stream message (called by a timer of the connection): asks
    /// for the watch again, resuming after the last event applied, and ends the old one. The same
    /// coordinator resumes it (nothing is repeated); one that restarted forgot the watch and, being
    /// another instance, sends a fresh snapshot — so this program's operations follow a restart.
    func checkWatch() {
        let old: (watch: UInt64, last: UInt64)? = lock.withLock {
            guard tracking.synced, tracking.watch != 0, !tracking.isClosed,
                  ContinuousClock.now - tracking.heard >= .milliseconds(Int(Self.watchCheckSeconds * 1000)) else { return nil }
            defer {
                tracking.heard = ContinuousClock.now
                tracking.synced = false
                tracking.watch = 0
            }
            return (tracking.watch, tracking.lastSequence)
        }
        guard let old else { return }
        loop.send({ $0.unwatch.watch = old.watch }, handler: { _ in })  // (a restarted coordinator never had it)
        watch(resumeAfter: old.last)
    }

    /// Starts the watch and waits for its snapshot.
    func startWatching(timeout: Double) throws(ClientError) {
        watch(resumeAfter: nil)
        let deadline = WaitDeadline(seconds: timeout)
        let failure: ClientError? = lock.withLock {
            while !tracking.synced, tracking.failure == nil {
                if !lock.wait(until: deadline) { return tracking.synced ? nil : .timeout(endpoint: endpoint, seconds: timeout) }
            }
            return tracking.failure
        }
        if let failure { throw failure }
    }

    /// Sends a `Watch` of everything; resuming after `resumeAfter` when the coordinator still holds
    /// those events, else with a fresh snapshot.
    private func watch(resumeAfter: UInt64?) {
        let instance = lock.withLock { tracking.instance }
        loop.send({
            $0.watch.all = Opq_V1_All()
            if let resumeAfter {
                $0.watch.resumeAfter = resumeAfter
                if !instance.isEmpty { $0.watch.instance = instance }
            }
        }, handler: { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let answer) where answer.reply.watching.resumed:
                // No snapshot comes: the events follow from where this client was.
                let held: [Opq_V1_CoordinatorToClient] = lock.withLock {
                    tracking.instance = answer.reply.watching.instance
                    tracking.watch = answer.reply.requestID
                    tracking.synced = true
                    defer { tracking.held = [] }
                    return tracking.held
                }
                for message in held { receive(message) }
            case .success(let answer):
                lock.withLock {
                    tracking.instance = answer.reply.watching.instance
                    tracking.watch = answer.reply.requestID
                }
            case .failure(let error):
                lock.withLock {
                    tracking.failure = error
                    lock.broadcast()
                }
            }
        })
    }

    /// A stream message from the coordinator (loop thread).
    func receive(_ message: Opq_V1_CoordinatorToClient) {
        lock.withLock { tracking.heard = ContinuousClock.now }
        switch message.body {
        case .snapshot(let snapshot): receive(snapshot)
        case .events(let events): receive(events, message: message)
        default: break
        }
    }

    private func receive(_ snapshot: Opq_V1_Snapshot) {
        let (updates, unreported, held): ([(RemoteOperation, Opq_V1_OperationInfo)], [RemoteOperation], [Opq_V1_CoordinatorToClient]) = lock.withLock {
            if tracking.synced { return ([], [], []) }  // a stale snapshot of a stream given up
            tracking.watch = snapshot.watch
            tracking.lastSequence = snapshot.sequence
            var seen = Set<OperationID>()
            let updates = snapshot.operations.compactMap { info -> (RemoteOperation, Opq_V1_OperationInfo)? in
                seen.insert(info.operationID)
                return tracking.operations[info.operationID].map { ($0, info) }
            }
            guard !snapshot.more else { return (updates, [], []) }
            tracking.synced = true
            lock.broadcast()
            // A snapshot lists unfinished operations only: a tracked one missing from it has finished.
            let unreported = tracking.operations.filter { !seen.contains($0.key) }.map(\.value)
            defer { tracking.held = [] }
            return (updates, unreported, tracking.held)
        }
        for (operation, info) in updates { settle(operation, info) }
        for operation in unreported { refresh(operation) }
        for message in held { receive(message) }
    }

    private func receive(_ events: Opq_V1_Events, message: Opq_V1_CoordinatorToClient) {
        enum Verdict { case hold, ignore, gap, apply }
        let verdict: Verdict = lock.withLock {
            if !tracking.synced { tracking.held.append(message); return .hold }
            if events.watch != tracking.watch { return .ignore }
            if events.previous != tracking.lastSequence { return .gap }
            return .apply
        }
        switch verdict {
        case .hold, .ignore: return
        case .gap:
            // Something was lost between the coordinator and us: resubscribe from the last event applied,
            // and end the old stream.
            let (last, old): (UInt64, UInt64) = lock.withLock {
                defer {
                    tracking.synced = false
                    tracking.watch = 0
                }
                return (tracking.lastSequence, tracking.watch)
            }
            loop.send({ $0.unwatch.watch = old }, handler: { _ in })
            watch(resumeAfter: last)
        case .apply:
            for item in events.items { apply(item) }
        }
    }

    private func apply(_ item: Opq_V1_Event) {
        guard let event = RemoteEvent(item) else { return }
        let (target, streams): (RemoteOperation?, [AsyncStream<RemoteEvent>.Continuation]) = lock.withLock {
            guard item.sequence > tracking.lastSequence else { return (nil, []) }
            tracking.lastSequence = item.sequence
            var target: RemoteOperation?
            if let id = event.operation {
                if let operation = tracking.operations[id] {
                    target = operation
                } else if tracking.submitsInFlight > 0 {
                    tracking.early[id, default: []].append(event)
                }
            }
            return (target, Array(tracking.streams.values))
        }
        for stream in streams { stream.yield(event) }
        if let target, target.apply(event) { untrack(target) }
    }

    /// Applies a reply's snapshot of `operation`; stops tracking it when that finished it.
    func settle(_ operation: RemoteOperation, _ info: Opq_V1_OperationInfo) {
        if operation.apply(info) { untrack(operation) }
    }

    /// Asks for `operation`'s state (after a resync that did not list it) and applies the answer.
    private func refresh(_ operation: RemoteOperation) {
        guard let id = operation.id else { return }
        loop.send({ $0.getOperation.operation = id.rawValue }, handler: { [weak self, operation] result in
            if case .success(let answer) = result { self?.settle(operation, answer.reply.operation) }
        })
    }

    private func untrack(_ operation: RemoteOperation) {
        guard let id = operation.id else { return }
        lock.withLock { _ = tracking.operations.removeValue(forKey: id) }
    }

    // MARK: Submissions (called around a Submit)

    /// A submission is about to be sent: keep events of unknown operations until its receipt.
    func submissionWillSend() { lock.withLock { tracking.submitsInFlight += 1 } }

    /// The receipt came (loop thread) or the submission failed (`accepted` empty): tracks the accepted
    /// operations, applies the events that came before the receipt.
    func submissionDidEnd(accepted: [(RemoteOperation, OperationID)]) {
        let early: [(RemoteOperation, [RemoteEvent])] = lock.withLock {
            tracking.submitsInFlight -= 1
            var early: [(RemoteOperation, [RemoteEvent])] = []
            for (operation, id) in accepted {
                tracking.operations[id] = operation
                if let events = tracking.early.removeValue(forKey: id) { early.append((operation, events)) }
            }
            if tracking.submitsInFlight == 0 { tracking.early = [:] }
            return early
        }
        for (operation, events) in early {
            for event in events where operation.apply(event) { untrack(operation) }
        }
    }

    /// Tracks an operation another client added (found in a listing), with the state the listing gave.
    func adopt(_ info: Opq_V1_OperationInfo) -> RemoteOperation {
        let id = info.operationID
        if let known = lock.withLock({ tracking.operations[id] }) { return known }
        let operation = RemoteOperation(work: info.coreWork)
        operation.adopt(info, coordinator: self)
        let tracked: RemoteOperation = lock.withLock {
            if let known = tracking.operations[id] { return known }
            if info.coreState != .finished { tracking.operations[id] = operation }
            return operation
        }
        if tracked === operation { _ = operation.apply(info) }
        return tracked
    }

    /// The connection closed: ends every ``events()`` sequence and every wait for an unfinished operation.
    func connectionDidClose() {
        lock.withLock {
            watchCheck?.cancel()
            watchCheck = nil
        }
        let (streams, operations) = lock.withLock {
            defer {
                tracking.isClosed = true
                tracking.streams = [:]
                tracking.operations = [:]
            }
            return (Array(tracking.streams.values), Array(tracking.operations.values))
        }
        for stream in streams { stream.finish() }
        for operation in operations { operation.connectionDidClose(.closed(endpoint: endpoint)) }
    }

    /// The tracked operation with `id`, if this program tracks it.
    func tracked(_ id: OperationID) -> RemoteOperation? { lock.withLock { tracking.operations[id] } }

    // MARK: Events

    /// Every event of the coordinator's stream from now on (all queues, all clients), as an
    /// `AsyncSequence`; it ends when the connection is closed (at once if it already was) or the
    /// consumer stops iterating.
    public func events() -> AsyncStream<RemoteEvent> {
        AsyncStream(bufferingPolicy: .unbounded) { continuation in
            let key: Int? = lock.withLock {
                guard !tracking.isClosed else { return nil }
                tracking.nextStream += 1
                tracking.streams[tracking.nextStream] = continuation
                return tracking.nextStream
            }
            guard let key else { return continuation.finish() }
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                self.lock.withLock { _ = self.tracking.streams.removeValue(forKey: key) }
            }
        }
    }
}
