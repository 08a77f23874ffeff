import Logging
import OPQCore
import OPQWire
import ZeroMQ

extension Coordinator {
    /// Carries out the turn's effects, commits what they journal, then sends everything queued: worker
    /// messages, orders, watcher events, replies. A worker that cannot take its orders is declared lost,
    /// which may produce more effects (journaled before the next sends); the loop runs until the core is quiet.
    func flush(now: Double) throws {
        retryWaitingReplies()
        try absorbAndCommit()
        for (id, message) in workerOutbox where !send(message, to: id) && sessions[id] != nil {
            // A registered worker that cannot take a message is gone: its attempts go back now, and
            // its session is dropped (it registers again if it comes back).
            core.workerLost(id, at: now)
            sessions[id] = nil
        }
        workerOutbox.removeAll(keepingCapacity: true)
        try absorbAndCommit()
        while mayOrder, !orders.isEmpty {
            let pending = orders
            orders.removeAll(keepingCapacity: true)
            for (id, items) in pending {
                for start in stride(from: 0, to: items.count, by: WireLimits.maxBatchItems) {
                    let batch = Array(items[start..<min(items.count, start + WireLimits.maxBatchItems)])
                    if !send(.orders(batch), to: id) {
                        if sessions[id] != nil { core.workerLost(id, at: now) }
                        sessions[id] = nil
                        break
                    }
                }
            }
            try absorbAndCommit()
        }
        sendWatcherEvents()
        if somethingFinished {
            somethingFinished = false
            answerSatisfiedWaiters()
        }
        for frames in clientOutbox { sendToClient(frames) }
        clientOutbox.removeAll(keepingCapacity: true)
    }

    /// Takes the core's effects: orders are queued per worker, events numbered and routed to watchers.
    /// Called before a watch's snapshot, so the snapshot and the event sequence agree.
    func absorbEffects() {
        core.takeEffects(into: &effects)
        for effect in effects {
            journal(effect)
            switch effect {
            case let .dispatch(id, attempt, worker):
                guard let details = core.dispatchDetails(id) else { continue }
                let dispatch = Opq_V1_Dispatch(id, attempt: attempt, details: details, killGrace: configuration.killGrace)
                orders[worker, default: []].append(.dispatch(dispatch))
            case let .kill(id, attempt, worker, reason):
                orders[worker, default: []].append(.kill(Opq_V1_Kill(id, attempt: attempt, reason: reason)))
            case .notify(let event):
                let numbered = events.append(.operation(event))
                route(numbered, job: event.job, operation: event.operation)
                if event.state == .finished { somethingFinished = true }
            case .jobFinished(let job):
                let numbered = events.append(.jobFinished(job))
                route(numbered, job: job, operation: nil)
                somethingFinished = true
            case .journal:
                break  // journaled above
            }
        }
    }

    /// Queues `event` on every watcher whose scope covers it.
    func route(_ event: LoggedEvent, job: JobID?, operation: OperationID?) {
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
            if covered { watchers.values[index].pending.append(event) }
            watchers.values.formIndex(after: &index)
        }
    }

    /// Sends each watcher the events queued for it this turn, as one `Events` message.
    ///
    /// First every watcher's pending events are taken out (the dictionary is not touched after that);
    /// only then are the messages sent. A send that finds the client gone removes all its watchers
    /// (``sendToClient(_:)``), which is safe because nothing here looks them up again.
    func sendWatcherEvents() {
        var messages: [(identity: [UInt8], message: Opq_V1_CoordinatorToClient)] = []
        var next = watchers.values.startIndex  // not `values.indices`: see route(_:job:operation:)
        while next != watchers.values.endIndex {
            let index = next
            watchers.values.formIndex(after: &next)
            guard let last = watchers.values[index].pending.last else { continue }
            if clientBacklog.isFull(watchers.values[index].identity) {
                // A full client skips these events: the next message it gets names them as `previous`,
                // so it sees the gap and resumes (ClientOutbox's policy).
                watchers.values[index].previous = last.sequence
                watchers.values[index].pending.removeAll()
                continue
            }
            var message = Opq_V1_CoordinatorToClient()
            message.events.watch = watchers.values[index].watch
            message.events.previous = watchers.values[index].previous
            message.events.items = watchers.values[index].pending.map(\.wire)
            watchers.values[index].previous = last.sequence
            watchers.values[index].pending.removeAll()
            messages.append((watchers.values[index].identity, message))
        }
        for (identity, message) in messages { queueToClient(message, identity: identity, now: true) }
    }

    /// Queues (or, with `now`, sends) `message` to the client `identity`.
    func queueToClient(_ message: Opq_V1_CoordinatorToClient, raw: [[UInt8]] = [], identity: [UInt8], now: Bool = false) {
        do {
            let frames = try Frames.encode(message, raw: raw, to: identity)
            if now { sendToClient(frames) } else { clientOutbox.append(frames) }
        } catch {
            logger.error("cannot encode a reply", metadata: ["error": "\(error)"])
        }
    }

    /// Answers a request that was not applied (malformed, or its client is full) at once.
    func refuseNow(_ requestID: UInt64, _ error: Opq_V1_Error, identity: [UInt8]) {
        do {
            sendToClient(try Frames.encode(Opq_V1_CoordinatorToClient.reply(requestID, error: error), to: identity), refusal: true)
        } catch {
            logger.error("cannot encode a reply", metadata: ["error": "\(error)"])
        }
    }

    /// Sends one framed message to a client, or keeps it in ``clientBacklog`` when the client cannot take
    /// it now (or older messages wait for it). A client that is gone loses its watches, waits and backlog.
    /// A `refusal` (a reply to a request that was not applied) may be dropped for a full client.
    func sendToClient(_ frames: [[UInt8]], refusal: Bool = false) {
        let identity = frames[0]
        if clientBacklog.hasWaiting(identity) {
            clientBacklog.keep(frames, refusal: refusal)
            return
        }
        switch sendNow(frames) {
        case .sent:
            return
        case .wouldBlock:
            clientBacklog.keep(frames, refusal: refusal)
        case .hostUnreachable:
            forgetClient(identity)
        }
    }

    /// Retries what waits in ``clientBacklog``.
    func retryWaitingReplies() {
        guard !clientBacklog.isEmpty else { return }
        for identity in clientBacklog.drain(send: sendNow) { forgetClient(identity) }
    }

    /// One non-blocking send on the clients' socket. An unexpected socket error counts as a gone client.
    private func sendNow(_ frames: [[UInt8]]) -> SendResult {
        do {
            return try clientsSocket.send(frames, flags: .dontWait)
        } catch {
            logger.error("cannot send to client", metadata: ["error": "\(error)"])
            return .hostUnreachable
        }
    }

    /// Drops everything kept for a client that is gone: its watches, waits and waiting messages.
    func forgetClient(_ identity: [UInt8]) {
        logger.debug("client gone; dropping its watches, waits and waiting replies")
        watchers = watchers.filter { $0.key.identity != identity }
        waiters.removeAll { $0.identity == identity }
        clientBacklog.drop(identity)
    }
}
