import Logging
import OPQCore
import OPQWire
import ZeroMQ

extension Coordinator {
    /// Carries out the turn's effects, commits what they journal, then sends everything queued: worker
    /// messages, orders, watcher events, replies. A worker that cannot take its orders is declared lost,
    /// which may produce more effects (journaled before the next sends); the loop runs until the core is quiet.
    func flush(now: Double) throws {
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
        for key in Array(watchers.keys) {
            let covered = watchers[key]!.covers(job: job ?? JobID(0)) {
                if queue == nil { queue = .some(operation.flatMap { core.queueName(of: $0) }) }
                return queue!
            }
            if covered { watchers[key]!.pending.append(event) }
        }
    }

    /// Sends each watcher the events queued for it this turn, as one `Events` message.
    func sendWatcherEvents() {
        for key in Array(watchers.keys) where !watchers[key]!.pending.isEmpty {
            let watcher = watchers[key]!
            var message = Opq_V1_CoordinatorToClient()
            message.events.watch = watcher.watch
            message.events.previous = watcher.previous
            message.events.items = watcher.pending.map(\.wire)
            watchers[key]!.previous = watcher.pending.last!.sequence
            watchers[key]!.pending.removeAll()
            queueToClient(message, identity: watcher.identity, now: true)
        }
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

    /// Sends one framed message to a client; a client that is gone loses its watches and waits.
    func sendToClient(_ frames: [[UInt8]]) {
        let result: SendResult
        do {
            result = try clientsSocket.send(frames, flags: .dontWait)
        } catch {
            logger.error("cannot send to client", metadata: ["error": "\(error)"])
            return
        }
        guard result != .sent else { return }
        let identity = frames[0]
        logger.debug("client unreachable; dropping its watches", metadata: ["result": "\(result)"])
        watchers = watchers.filter { $0.key.identity != identity }
        waiters.removeAll { $0.identity == identity }
    }
}
