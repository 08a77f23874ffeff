import Logging
import OPQCore
import OPQWire
import ZeroMQ

extension Coordinator {
    /// Finishes the turn: retries replies clients could not take, then carries out the state machine's
    /// end-of-turn actions until it has nothing more (a worker that could not take a message is lost,
    /// and what the core does about it is journaled before anything that follows is sent). Returns when
    /// the loop must wake at the latest.
    func finishTurn(now: Double) throws -> Double {
        retryWaitingReplies()
        var wakeAt = now + configuration.heartbeatInterval
        repeat {
            let actions = state.finishTurn(now: now)
            if case .wakeAt(let time)? = actions.last { wakeAt = time }
            try perform(actions, now: now)
        } while state.hasTurnWork
        // A client that could not take what was just sent is retried soon, not at the next deadline.
        if !state.clientBacklog.isEmpty { wakeAt = min(wakeAt, now + CoordinatorState.backlogRetryInterval) }
        return wakeAt
    }

    /// Carries out `actions` in order. A failed journal commit (full disk, see ``JournalStall``) holds the
    /// replies that follow it, and orders wait until a commit succeeds.
    func perform(_ actions: [CoordinatorAction], now: Double) throws {
        var holdingReplies = false
        for action in actions {
            switch action {
            case let .toWorker(id, message):
                if !send(message, to: id) { state.workerUnreachable(id, now: now) }
            case let .orders(id, items):
                guard mayOrder else {
                    state.orders[id, default: []] += items
                    continue
                }
                for batch in items.orderBatches() {
                    if !send(.orders(Array(batch)), to: id) {
                        state.workerUnreachable(id, now: now)
                        break
                    }
                }
                if configuration.spin > .zero, !dispatchedInProcessWork { dispatchedInProcessWork = items.contains(where: \.dispatchesHandlerWork) }
            case let .toConnection(identity, message):
                send(message, toConnection: identity)
            case .reply(let frames):
                if holdingReplies { durability!.stall!.heldReplies.append(frames) } else { sendToClient(frames) }
            case .notice(let frames):
                sendToClient(frames)
            case .refusal(let frames):
                sendToClient(frames, refusal: true)
            case .journal(let entry):
                durability?.journal.append(entry)
            case let .journalOutput(output, id):
                durability?.journal.append(output: output, of: id)
            case .commit:
                let stalledBefore = durability?.stall != nil
                if try !commitJournal(), !stalledBefore { holdingReplies = true }
            case let .spoolOutput(chunk, bytes):
                spool.write(chunk, bytes: bytes)
                if let error = spool.takeError() { logger.warning("output spool", metadata: ["error": "\(error)"]) }
            case let .spoolFinished(id, attempt, totals):
                spool.finished(id, attempt: attempt, totals: totals)
            case let .readOutput(read, requestID, identity):
                var (slice, bytes) = spool.read(OperationID(read.operation), read.stream, offset: read.offset, maxBytes: read.maxBytes)
                if !bytes.isEmpty { slice.frame = 1 }
                state.queueToClient(.reply(requestID) { $0.output = slice }, raw: bytes.isEmpty ? [] : [bytes], identity: identity)
            case let .prune(request, requestID, identity):
                try prune(request, requestID: requestID, identity: identity)
            case .wakeAt:
                break
            }
        }
    }

    /// Sends one framed message to a client, or keeps it in the state's client backlog when the client
    /// cannot take it now (or older messages wait for it). A client that is gone loses its watches, waits
    /// and backlog. A `refusal` (a reply to a request that was not applied) may be dropped for a full client.
    func sendToClient(_ frames: [[UInt8]], refusal: Bool = false) {
        let identity = frames[0]
        if state.clientBacklog.hasWaiting(identity) {
            state.keepForLater(frames, refusal: refusal)
            return
        }
        switch sendNow(frames) {
        case .sent:
            return
        case .wouldBlock:
            state.keepForLater(frames, refusal: refusal)
        case .hostUnreachable:
            state.forgetClient(identity)
        }
    }

    /// Retries what waits in the client backlog.
    func retryWaitingReplies() {
        guard !state.clientBacklog.isEmpty else { return }
        for identity in state.clientBacklog.drain(send: sendNow) { state.forgetClient(identity) }
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

    /// Sends `message` to worker `id` on its session's connection now, acknowledging its durable reports
    /// and echoing its lease request. Returns false when the worker cannot take it (no session, gone or
    /// saturated).
    @discardableResult
    func send(_ message: Opq_V1_CoordinatorToWorker, to id: WorkerID) -> Bool {
        // One lookup of the name, then the session in place (sending changes no session).
        guard let index = state.sessions.index(forKey: id) else {
            logger.debug("no session to send to", metadata: ["worker.id": "\(id)"])
            return false
        }
        var message = message
        message.reportsDurable = state.sessions.values[index].reportsDurable
        message.leaseEcho = state.sessions.values[index].leaseRequest
        guard send(message, toConnection: state.sessions.values[index].identity) else { return false }
        state.sessions.values[index].lastSent = clock.now()
        return true
    }

    /// Sends `message` to the connection with routing id `identity` now.
    @discardableResult
    func send(_ message: Opq_V1_CoordinatorToWorker, toConnection identity: [UInt8]) -> Bool {
        do {
            // A hosted worker's link (the message itself, not encoded), or else a connection of the socket.
            let result = try directLinks?.deliver(message, to: identity).result
                ?? workersSocket.send(try Frames.encode(message, to: identity), flags: .dontWait)
            guard result == .sent else {
                let worker = state.workerIdentities[identity].map { "\($0)" } ?? "unregistered"
                logger.warning("worker unreachable", metadata: ["worker.id": "\(worker)", "result": "\(result)"])
                return false
            }
            return true
        } catch {
            logger.error("cannot send to worker", metadata: ["error": "\(error)"])
            return false
        }
    }
}

extension DirectLinks.Delivery {
    /// The socket's result for a delivery over a direct link; nil when the routing id is no link's.
    fileprivate var result: SendResult? {
        switch self {
        case .delivered: .sent
        case .full: .wouldBlock
        case .unreachable: .hostUnreachable
        case .notALink: nil
        }
    }
}

extension Opq_V1_Order {
    /// A dispatch of handler work, which a worker runs on a thread of its own (no process to start).
    var dispatchesHandlerWork: Bool {
        guard case .dispatch(let dispatch)? = kind else { return false }
        switch dispatch.work.kind {
        case .handler?, .handlers?: return true
        case .command?, .commands?, nil: return false
        }
    }
}
