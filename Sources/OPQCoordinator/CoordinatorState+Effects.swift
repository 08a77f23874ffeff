import Logging
import OPQCore
import OPQJournal
import OPQWire

extension CoordinatorState {
    /// Takes the core's effects: durable records are queued for the turn's journal transaction, orders
    /// per worker, events numbered and routed to watchers. Called before a watch's snapshot and a wait's
    /// check, so they and the event sequence agree.
    mutating func absorbEffects() {
        core.takeEffects(into: &effects)
        for effect in effects {
            // Only records and finished jobs are journaled (``journal(_:)``): the others skip that call,
            // which copied every effect once more (callgrind: ≈ 7 effects per operation).
            switch effect {
            case let .dispatch(id, attempt, worker, details):
                var dispatch = Opq_V1_Dispatch(id, attempt: attempt, details: details, killGrace: configuration.killGrace)
                dispatch.dependencies = dependencyOutcomes(of: id, work: details.work)
                orders[worker, default: []].append(.dispatch(dispatch))
            case let .kill(id, attempt, worker, reason):
                orders[worker, default: []].append(.kill(Opq_V1_Kill(id, attempt: attempt, reason: reason)))
            case .notify(let event):
                let numbered = events.append(.operation(event), cause: cause)
                route(numbered, job: event.job, operation: event.operation)
                if event.state == .finished { somethingFinished = true }
            case .jobFinished(let job):
                journal(effect)
                let numbered = events.append(.jobFinished(job), cause: cause)
                route(numbered, job: job, operation: nil)
                somethingFinished = true
            case .journal:
                journal(effect)
            }
        }
    }

    /// Queues one of the core's durable records for the turn's journal transaction. Only what the core
    /// emits as a record is journaled; a finished job is stamped with the turn's wall clock.
    mutating func journal(_ effect: Effect) {
        guard isDurable else { return }
        if case .jobFinished(let job) = effect { jobFinishedAt[job] = wallTime }
        guard let entry = JournalEntry(effect, time: wallTime) else { return }
        journalEntries.append(entry)
    }

    /// Queues `event` on every watcher whose scope covers it.
    mutating func route(_ event: LoggedEvent, job: JobID?, operation: OperationID?) {
        guard !watchers.isEmpty else { return }
        let job = job ?? operation.flatMap { core.dispatchDetails($0)?.job }
        var queue: String??
        // In-place mutation through the dictionary's values: no key is looked up again, so nothing can
        // be missing (the loop sends nothing and removes nothing). A plain index, not `values.indices`:
        // that collection holds the dictionary's storage, so every append copied all watchers and the
        // pending array (O(events²) in a turn that cancels thousands of watched operations).
        var index = watchers.values.startIndex
        while index != watchers.values.endIndex {
            let covered = watchers.values[index].covers(job: job ?? JobID(0)) {
                if queue == nil { queue = .some(operation.flatMap { core.queueName(of: $0) }) }
                return queue!
            }
            if covered {
                watchers.values[index].pending.append(event)
                if case .jobFinished = event.kind { watchers.values[index].pendingJobFinished = true }
            }
            watchers.values.formIndex(after: &index)
        }
    }

    /// Takes the events queued for each watcher, one `Events` message per watcher (framed), from those
    /// whose events are due (``Watcher/sendDue``); the others keep theirs, and ``heldEventsDue`` says
    /// when the first of them is.
    ///
    /// A full client skips these events: the next message it gets names them as `previous`, so it sees
    /// the gap and resumes (ClientOutbox's policy).
    mutating func watcherEvents(now: Double) -> [[[UInt8]]] {
        var messages: [[[UInt8]]] = []
        heldEventsDue = nil
        var next = watchers.values.startIndex  // not `values.indices`: see route(_:job:operation:)
        while next != watchers.values.endIndex {
            let index = next
            watchers.values.formIndex(after: &next)
            guard let last = watchers.values[index].pending.last else { continue }
            let due = watchers.values[index].sendDue
            if due > now {
                heldEventsDue = min(heldEventsDue ?? due, due)
                continue
            }
            watchers.values[index].pendingJobFinished = false
            if clientBacklog.isFull(watchers.values[index].identity) {
                watchers.values[index].previous = last.sequence
                watchers.values[index].pending.removeAll()
                continue
            }
            watchers.values[index].lastSent = now
            var message = Opq_V1_CoordinatorToClient()
            message.events.watch = watchers.values[index].watch
            message.events.previous = watchers.values[index].previous
            message.events.items = watchers.values[index].pending.map { $0.wire(outputs: outputs) }
            watchers.values[index].previous = last.sequence
            watchers.values[index].pending.removeAll()
            if let frames = frame(message, identity: watchers.values[index].identity) { messages.append(frames) }
        }
        return messages
    }

    /// `message` framed for the client `identity`, or nil (logged) when it cannot be encoded.
    func frame(_ message: Opq_V1_CoordinatorToClient, raw: [[UInt8]] = [], identity: [UInt8]) -> [[UInt8]]? {
        do {
            return try Frames.encode(message, raw: raw, to: identity)
        } catch {
            logger.error("cannot encode a reply", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Queues a reply to the client `identity`, sent after the turn's journal commit.
    mutating func queueToClient(_ message: Opq_V1_CoordinatorToClient, raw: [[UInt8]] = [], identity: [UInt8]) {
        if let frames = frame(message, raw: raw, identity: identity) { clientOutbox.append(frames) }
    }

    /// Answers a request that was not applied (malformed, or its client is full) at once.
    mutating func refuseNow(_ requestID: UInt64, _ error: Opq_V1_Error, identity: [UInt8]) {
        if let frames = frame(.reply(requestID, error: error), identity: identity) { actions.append(.refusal(frames)) }
    }

    /// The loop could not hand `frames` to their client now: they wait in ``clientBacklog``.
    mutating func keepForLater(_ frames: [[UInt8]], refusal: Bool) {
        clientBacklog.keep(frames, refusal: refusal)
    }

    /// Drops everything kept for a client that is gone: its watches, waits and waiting messages.
    mutating func forgetClient(_ identity: [UInt8]) {
        logger.debug("client gone; dropping its watches, waits and waiting replies")
        watchers = watchers.filter { $0.key.identity != identity }
        waiters.removeAll { $0.identity == identity }
        clientBacklog.drop(identity)
    }
}
