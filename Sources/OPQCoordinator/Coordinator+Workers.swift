import Logging
import OPQCore
import OPQJournal
import OPQWire
import ZeroMQ

/// A registered worker as the coordinator's shell sees it.
struct WorkerSession {
    let id: WorkerID
    /// Its routing identity (the id's bytes).
    let identity: [UInt8]
    /// Its registration in the core.
    var handle: Scheduler.WorkerHandle
    /// What it said when it registered (handlers, host, pid), for listings.
    var registration: Opq_V1_Register
    /// When the coordinator last sent it anything (heartbeats are due an interval later).
    var lastSent: Double
    /// The sequence of the last `Reports` handled from it (since it registered).
    var reportsReceived: UInt64 = 0
    /// The sequence up to which its reports are journaled (acknowledged in every message it is sent).
    var reportsDurable: UInt64 = 0
}

extension Coordinator {
    /// One message from a worker.
    func handleWorkerMessage(_ frames: [[UInt8]], now: Double) throws {
        guard let identity = frames.first, !identity.isEmpty else { return }
        let id = WorkerID(String(decoding: identity, as: UTF8.self))
        let message: Opq_V1_WorkerMessage
        let raw: [[UInt8]]
        do {
            (_, message, raw) = try Frames.decodeRouted(frames, as: Opq_V1_WorkerMessage.self)
        } catch {
            logger.warning("malformed message from worker", metadata: ["worker.id": "\(id)", "error": "\(error)"])
            disconnect(id, error.description, code: error.isProtocolMismatch ? .unsupportedProtocol : .malformedMessage)
            return
        }
        if case .register(let register) = message.body {
            self.register(id, identity: identity, register, now: now)
            return
        }
        guard let session = sessions[id], core.isLive(session.handle) else {
            // Unknown, or declared lost: it must register again and say what it still holds.
            disconnect(id, "not registered: send Register first", code: .malformedMessage)
            return
        }
        switch message.body {
        case .heartbeat:
            core.heartbeat(from: session.handle, at: now)
        case .reports(let reports):
            for item in reports.items { report(item, raw: raw, from: session, now: now) }
            if reports.sequence > session.reportsReceived { sessions[id]?.reportsReceived = reports.sequence }
        case .goodbye(let goodbye):
            logger.info("worker left", metadata: ["worker.id": "\(id)", "reason": "\(goodbye.reason)"])
            core.workerLeft(id, at: now)
            sessions[id] = nil
        case .register, nil:
            break
        }
    }

    private func register(_ id: WorkerID, identity: [UInt8], _ register: Opq_V1_Register, now: Double) {
        guard register.workerName == id.name else {
            disconnect(id, "worker_name '\(register.workerName)' must equal the socket's routing id '\(id)'", code: .malformedMessage)
            return
        }
        let handle = core.workerJoined(
            id, slots: Int(register.slots), queues: register.queueSet, labels: register.labels,
            holding: register.heldAttempts, at: now)
        let rejoined = sessions[id] != nil
        sessions[id] = WorkerSession(id: id, identity: identity, handle: handle, registration: register, lastSent: now)
        logger.info(rejoined ? "worker re-registered" : "worker joined", metadata: [
            "worker.id": "\(id)", "slots": "\(register.slots)", "held": "\(register.held.count)",
        ])
        var welcome = Opq_V1_CoordinatorToWorker()
        welcome.welcome.protocolVersion = WireLimits.protocolVersion
        welcome.welcome.heartbeatIntervalSeconds = configuration.heartbeatInterval
        welcome.welcome.liveness = UInt32(configuration.liveness)
        welcome.welcome.coordinatorID = instanceID
        workerOutbox.append((id, welcome))
    }

    private func report(_ item: Opq_V1_Report, raw: [[UInt8]], from session: WorkerSession, now: Double) {
        switch item.kind {
        case .started(let attempt):
            core.started(attempt.operationID, attempt: Int(attempt.attempt), worker: session.handle, at: now)
        case .finished(let finished):
            let id = finished.operationID
            let accepted = core.finished(id, attempt: Int(finished.attempt), worker: session.handle, finished.report, at: now)
            guard accepted else {
                logger.debug("stale report ignored", metadata: ["operation.id": "\(id)", "worker.id": "\(session.id)"])
                return
            }
            let output = OperationOutput(
                exitCode: finished.hasExitCode ? finished.exitCode : nil, signal: finished.hasSignal ? finished.signal : nil,
                duration: finished.durationSeconds,
                stdout: finished.hasStdout ? finished.stdout.bytes(in: raw) : [], stdoutTotal: finished.stdout.totalBytes,
                stderr: finished.hasStderr ? finished.stderr.bytes(in: raw) : [], stderrTotal: finished.stderr.totalBytes,
                errorMessage: finished.errorMessage)
            outputs.record(output, for: id)
            if output.isWorthJournaling { durability?.journal.append(output: output, of: id) }
        case .progress(let progress):
            core.heartbeat(from: session.handle, at: now)
            // Only the worker running that attempt may report its progress: anything else (unknown,
            // finished or foreign operations) is dropped, not kept in the event log.
            guard core.holds(session.handle, OperationID(progress.operation), attempt: Int(progress.attempt)) else {
                logger.debug("stale progress ignored", metadata: ["operation.id": "\(progress.operation)", "worker.id": "\(session.id)"])
                return
            }
            let event = events.append(.progress(progress))
            route(event, job: nil, operation: OperationID(progress.operation))
        case nil:
            break
        }
    }

    /// Queues a Disconnect for `id` (sent at the end of the turn).
    func disconnect(_ id: WorkerID, _ reason: String, code: Opq_V1_ErrorCode) {
        var message = Opq_V1_CoordinatorToWorker()
        message.disconnect.reason = reason
        message.disconnect.code = code
        workerOutbox.append((id, message))
    }

    /// Forgets sessions of workers the core declared lost; they are told to register again.
    func dropLostSessions() {
        for (id, session) in sessions where !core.isLive(session.handle) {
            logger.warning("worker lost", metadata: ["worker.id": "\(id)"])
            sessions[id] = nil
            disconnect(id, "declared lost (no heartbeat): register again", code: .internal)
        }
    }

    /// Sends a heartbeat to every worker that has been sent nothing for an interval.
    func sendHeartbeats(now: Double) {
        for (id, session) in sessions where session.lastSent + configuration.heartbeatInterval <= now {
            workerOutbox.append((id, .heartbeat))
        }
    }

    /// Sends `message` to worker `id` now. Returns false when the worker cannot take it (gone or saturated).
    @discardableResult
    func send(_ message: Opq_V1_CoordinatorToWorker, to id: WorkerID) -> Bool {
        let identity = sessions[id]?.identity ?? Array(id.name.utf8)
        var message = message
        message.reportsDurable = sessions[id]?.reportsDurable ?? 0
        do {
            let frames = try Frames.encode(message, to: identity)
            let result = try workersSocket.send(frames, flags: .dontWait)
            guard result == .sent else {
                logger.warning("worker unreachable", metadata: ["worker.id": "\(id)", "result": "\(result)"])
                return false
            }
            sessions[id]?.lastSent = clock.now()
            return true
        } catch {
            logger.error("cannot send to worker", metadata: ["worker.id": "\(id)", "error": "\(error)"])
            return false
        }
    }
}
