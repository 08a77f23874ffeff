import Foundation
import Logging
import OPQCore
import OPQJournal
import OPQWire

/// A registered worker as the coordinator's shell sees it: one session, bound to one connection.
///
/// Trust (SEMANTICS §12): a worker's name is bound to its session, and the session to the connection it
/// registered on — the routing id, which the worker draws at random for every connection (the ROUTER has
/// `ROUTER_HANDOVER` off, so another connection with the same routing id gets nothing while this one is
/// up). A message is taken as the session's only when it comes from that connection. A worker that
/// reconnects proves it is the same session with the ``secret`` it was given in `Welcome`; without it,
/// a registration under a live session's name is refused (`WORKER_NAME_IN_USE`) until that session is
/// declared lost. With CURVE keys the worker's public key takes the secret's place (the same check, on
/// the key the ZAP handler authenticated), and a key registers one name: a second live registration
/// with the same key under another name is refused.
struct WorkerSession {
    let id: WorkerID
    /// The routing id of the connection the session is bound to (its latest registration's).
    var identity: [UInt8]
    /// Random bytes given in `Welcome`; a re-registration on a new connection must send them back.
    let secret: [UInt8]
    /// The CURVE public key its connection was admitted with (nil without CURVE).
    var publicKey: String?
    /// Its registration in the core.
    var handle: Scheduler.WorkerHandle
    /// What it said when it registered (handlers, host, pid), for listings. Kept in a box: sessions are
    /// copied several times a turn (lookups, loops over them), and the message's fields cost a retain and
    /// a release each per copy (callgrind: ≈ 10 copies per operation at one slot per worker).
    var registration: Opq_V1_Register {
        get { registrationBox.message }
        set { registrationBox = RegistrationBox(newValue) }
    }
    private var registrationBox: RegistrationBox
    /// When the coordinator last sent it anything (heartbeats are due an interval later).
    var lastSent: Double
    /// When it was last heard from (for the retry delay of a refused registration under its name).
    var lastHeard: Double
    /// The latest `lease_request` received from it, echoed in every message it is sent (leases).
    var leaseRequest: UInt64 = 0
    /// The sequence of the last `Reports` handled from it (since it registered).
    var reportsReceived: UInt64 = 0
    /// The sequence up to which its reports are journaled (acknowledged in every message it is sent).
    var reportsDurable: UInt64 = 0

    init(id: WorkerID, identity: [UInt8], secret: [UInt8], publicKey: String?, handle: Scheduler.WorkerHandle,
         registration: Opq_V1_Register, lastSent: Double, lastHeard: Double, leaseRequest: UInt64) {
        self.id = id
        self.identity = identity
        self.secret = secret
        self.publicKey = publicKey
        self.handle = handle
        registrationBox = RegistrationBox(registration)
        self.lastSent = lastSent
        self.lastHeard = lastHeard
        self.leaseRequest = leaseRequest
    }
}

/// A worker's `Register` message behind one reference (``WorkerSession/registration``); never mutated.
final class RegistrationBox: Sendable {
    let message: Opq_V1_Register

    init(_ message: Opq_V1_Register) { self.message = message }
}

extension CoordinatorState {
    /// Bytes in a session secret.
    static let sessionSecretBytes = 16

    /// One message from a worker connection, admitted with the CURVE public key `peerKey` (nil without CURVE).
    mutating func handleWorker(_ frames: [[UInt8]], peerKey: String?, now: Double) {
        guard let identity = frames.first, !identity.isEmpty, admitsWorker(identity, peerKey: peerKey, now: now) else { return }
        let message: Opq_V1_WorkerMessage
        let raw: [[UInt8]]
        do {
            (_, message, raw) = try Frames.decodeRouted(frames, as: Opq_V1_WorkerMessage.self)
        } catch {
            return refuseMalformed(from: identity, error)
        }
        handleWorker(valid: message, raw: raw, from: identity, peerKey: peerKey, now: now)
    }

    /// One message a worker in this process passed over a direct link as it is (``OPQWire/DirectLinks``):
    /// not decoded, validated as a decode would have; then handled as one from the socket (no peer key).
    mutating func handleWorker(_ message: Opq_V1_WorkerMessage, raw: [[UInt8]], from identity: [UInt8], now: Double) {
        guard !identity.isEmpty, admitsWorker(identity, peerKey: nil, now: now) else { return }
        do {
            try message.validate(rawFrames: raw.count)
        } catch {
            return refuseMalformed(from: identity, error)
        }
        handleWorker(valid: message, raw: raw, from: identity, peerKey: nil, now: now)
    }

    /// Whether a connection's key is still authorized; if it was revoked (SIGHUP) after it connected, the
    /// worker is disconnected here.
    private mutating func admitsWorker(_ identity: [UInt8], peerKey: String?, now: Double) -> Bool {
        guard isAuthorized(peerKey, as: .worker) else {
            if let id = workerIdentities[identity], let session = sessions[id] {
                revoke(id, session: session, now: now)
            } else {
                disconnect(connection: identity, "this worker's key is no longer authorized by the coordinator", code: .internal)
            }
            return false
        }
        return true
    }

    private mutating func refuseMalformed(from identity: [UInt8], _ error: WireError) {
        let id = workerIdentities[identity].map { "\($0)" } ?? "unregistered"
        logger.warning("malformed message from worker", metadata: ["worker.id": "\(id)", "error": "\(error)"])
        disconnect(connection: identity, error.description, code: error.isProtocolMismatch ? .unsupportedProtocol : .malformedMessage)
    }

    /// One decoded and validated message from the worker connection `identity` (CURVE key `peerKey`).
    private mutating func handleWorker(
        valid message: Opq_V1_WorkerMessage, raw: [[UInt8]], from identity: [UInt8], peerKey: String?, now: Double
    ) {
        switch message.body {
        case .register: begin(.workerRegister)
        case .heartbeat: begin(.workerHeartbeat)
        case .goodbye: begin(.workerGoodbye)
        case .reports, nil: begin(.workerReport)
        }
        if case .register(let register) = message.body {
            self.register(identity, register, peerKey: peerKey, leaseRequest: message.leaseRequest, now: now)
            return
        }
        guard let id = workerIdentities[identity], let session = sessions[id], session.identity == identity,
              core.isLive(session.handle) else {
            // Unknown, replaced by a newer connection of its session, or declared lost: it must register
            // again (and say what it still holds).
            disconnect(connection: identity, "not registered: send Register first", code: .malformedMessage)
            return
        }
        heard(from: id, leaseRequest: message.leaseRequest, now: now)
        switch message.body {
        case .heartbeat:
            core.heartbeat(from: session.handle, at: now)
            // Answered at once: the answer echoes this heartbeat's lease_request and renews the lease.
            workerOutbox.append((id, .heartbeat))
        case .reports(let reports):
            for item in reports.items { report(item, raw: raw, from: session, now: now) }
            if reports.sequence > session.reportsReceived { sessions[id]?.reportsReceived = reports.sequence }
            // Output chunks wait for this acknowledgement (the worker's flow-control window): answer at once.
            if reports.items.contains(where: { if case .output = $0.kind { true } else { false } }) {
                workerOutbox.append((id, .heartbeat))
            }
        case .goodbye(let goodbye):
            logger.info("worker left", metadata: ["worker.id": "\(id)", "reason": "\(goodbye.reason)"])
            core.workerLeft(id, at: now)
            endSession(id)
        case .register, nil:
            break
        }
    }

    /// Notes that the session `id` was heard from: its lease request is echoed from now on.
    private mutating func heard(from id: WorkerID, leaseRequest: UInt64, now: Double) {
        // One lookup of the name (a string hashed), then in place: this runs for every worker message.
        guard let index = sessions.index(forKey: id) else { return }
        sessions.values[index].lastHeard = now
        if leaseRequest > sessions.values[index].leaseRequest { sessions.values[index].leaseRequest = leaseRequest }
    }

    private mutating func register(_ identity: [UInt8], _ register: Opq_V1_Register, peerKey: String?, leaseRequest: UInt64, now: Double) {
        let id = WorkerID(register.workerName)
        if let registered = workerIdentities[identity], registered != id, sessions[registered]?.identity == identity {
            disconnect(connection: identity, "this connection is registered as worker '\(registered)': a worker keeps its name",
                       code: .malformedMessage)
            return
        }
        if let peerKey, let holder = sessions.values.first(where: { $0.publicKey == peerKey && $0.id != id && core.isLive($0.handle) }) {
            return refuseNameInUse(identity, session: holder, now: now, reason: """
                this worker's key is registered as worker '\(holder.id)' (a key registers one name): give each \
                worker its own key ('opq keys generate --role worker'), or stop the other one
                """)
        }
        var secret = [UInt8]()
        if let session = sessions[id], core.isLive(session.handle) {
            let proven = peerKey != nil ? session.publicKey == peerKey : Self.same(register.sessionSecret, session.secret)
            guard session.identity == identity || proven else {
                return refuseNameInUse(identity, session: session, now: now)
            }
            secret = session.secret
            if session.identity != identity { workerIdentities[session.identity] = nil }
        } else {
            if let stale = sessions[id] { workerIdentities[stale.identity] = nil }
            secret = makeSecret()
        }
        let handle = core.workerJoined(
            id, slots: Int(register.slots), queues: register.queueSet, labels: register.labels,
            cpus: register.announcedCpus, memory: register.announcedMemory, holding: register.heldAttempts, at: now)
        let rejoined = sessions[id] != nil
        sessions[id] = WorkerSession(id: id, identity: identity, secret: secret, publicKey: peerKey, handle: handle, registration: register,
                                     lastSent: now, lastHeard: now, leaseRequest: leaseRequest)
        workerIdentities[identity] = id
        logger.info(rejoined ? "worker re-registered" : "worker joined", metadata: [
            "worker.id": "\(id)", "slots": "\(register.slots)", "held": "\(register.held.count)",
        ])
        var welcome = Opq_V1_CoordinatorToWorker()
        welcome.welcome.protocolVersion = WireLimits.protocolVersion
        welcome.welcome.heartbeatIntervalSeconds = configuration.heartbeatInterval
        welcome.welcome.liveness = UInt32(configuration.liveness)
        welcome.welcome.coordinatorID = instanceID
        welcome.welcome.sessionSecret = Data(secret)
        welcome.welcome.leaseMarginSeconds = core.configuration.leaseMargin
        workerOutbox.append((id, welcome))
    }

    /// Refuses a registration under the name of a live session that it cannot prove to be: an impostor,
    /// a second worker started with the same name, or a restarted worker whose old session is not
    /// declared lost yet (it retries after `retry_after_seconds`).
    private mutating func refuseNameInUse(_ identity: [UInt8], session: WorkerSession, now: Double, reason: String? = nil) {
        let timeout = configuration.heartbeatInterval * Double(configuration.liveness)
        let retryAfter = max(0, session.lastHeard + timeout - now) + core.configuration.leaseMargin
        let holder = session.registration
        let reason = reason ?? "worker name '\(session.id)' is in use by a live worker (pid \(holder.pid) on host '\(holder.host)', "
            + "heard from \(Self.seconds(now - session.lastHeard)) ago): give this worker another --name, or stop the other one"
        logger.warning("refused a registration: worker name in use", metadata: [
            "worker.id": "\(session.id)", "retry.after.seconds": "\(retryAfter)",
        ])
        var message = Opq_V1_CoordinatorToWorker()
        message.disconnect.reason = reason
        message.disconnect.code = .workerNameInUse
        message.disconnect.retryAfterSeconds = retryAfter
        actions.append(.toConnection(identity, message))
    }

    /// Compares a presented secret with the session's in constant time.
    static func same(_ presented: Data, _ secret: [UInt8]) -> Bool {
        guard presented.count == secret.count, !secret.isEmpty else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(presented, secret) { difference |= a ^ b }
        return difference == 0
    }

    static func seconds(_ value: Double) -> String { String(format: "%.1f s", value) }

    private mutating func report(_ item: Opq_V1_Report, raw: [[UInt8]], from session: WorkerSession, now: Double) {
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
                errorMessage: finished.errorMessage, worker: session.id.name, endedAt: now,
                result: finished.hasResult ? finished.result.bytes(in: raw) : [])
            keep(output, for: id)
            runningOutput[id] = nil
            actions.append(.spoolFinished(id, attempt: finished.attempt, totals: [finished.stdout.totalBytes, finished.stderr.totalBytes]))
            if isDurable, output.isWorthJournaling { actions.append(.journalOutput(output, of: id)) }
        case .progress(let progress):
            core.heartbeat(from: session.handle, at: now)
            // Only the worker running that attempt may report its progress: anything else (unknown,
            // finished or foreign operations) is dropped, not kept in the event log.
            guard core.holds(session.handle, OperationID(progress.operation), attempt: Int(progress.attempt)) else {
                logger.debug("stale progress ignored", metadata: ["operation.id": "\(progress.operation)", "worker.id": "\(session.id)"])
                return
            }
            let event = events.append(.progress(progress), cause: cause)
            route(event, job: nil, operation: OperationID(progress.operation))
        case .output(let chunk):
            // Only the worker running that attempt may add to its output.
            guard core.holds(session.handle, OperationID(chunk.operation), attempt: Int(chunk.attempt)) else {
                logger.debug("stale output ignored", metadata: ["operation.id": "\(chunk.operation)", "worker.id": "\(session.id)"])
                return
            }
            let bytes = chunk.bytes(in: raw)
            actions.append(.spoolOutput(chunk, bytes: bytes))
            noteRunningOutput(chunk, count: bytes.count)
            pushOutput(chunk, bytes: bytes)
        case nil:
            break
        }
    }

    /// Tells the connection `identity` why it is dropped, at once (it may belong to no session).
    mutating func disconnect(connection identity: [UInt8], _ reason: String, code: Opq_V1_ErrorCode) {
        var message = Opq_V1_CoordinatorToWorker()
        message.disconnect.reason = reason
        message.disconnect.code = code
        actions.append(.toConnection(identity, message))
    }

    /// Forgets session `id` and its connection.
    mutating func endSession(_ id: WorkerID) {
        if let session = sessions.removeValue(forKey: id), workerIdentities[session.identity] == id {
            workerIdentities[session.identity] = nil
        }
    }

    /// Forgets sessions of workers the core declared lost; they are told to register again (with no
    /// lease echo: a lost worker's lease is not renewed).
    mutating func dropLostSessions() {
        // Runs every turn: looked at in place, not by copying every session (see `sendHeartbeats`).
        guard sessions.values.contains(where: { !core.isLive($0.handle) }) || workerIdentities.count > sessions.count else { return }
        for (id, session) in sessions where !core.isLive(session.handle) {
            logger.warning("worker lost", metadata: ["worker.id": "\(id)"])
            endSession(id)
            disconnect(connection: session.identity, "declared lost (no heartbeat): register again", code: .internal)
        }
        // Sessions dropped elsewhere (a worker that could not take a message) leave their connection behind.
        if workerIdentities.count > sessions.count {
            workerIdentities = workerIdentities.filter { sessions[$0.value]?.identity == $0.key }
        }
    }

    /// Sends a heartbeat to every worker that has been sent nothing for an interval.
    mutating func sendHeartbeats(now: Double) {
        // Every turn: through the values in place (a `for (id, session) in sessions` copies each session,
        // a retain and a release per reference it holds).
        var index = sessions.values.startIndex
        while index != sessions.values.endIndex {
            if sessions.values[index].lastSent + configuration.heartbeatInterval <= now {
                workerOutbox.append((sessions.values[index].id, .heartbeat))
            }
            sessions.values.formIndex(after: &index)
        }
    }

    /// A registered worker could not take a message: its attempts go back now, and its session is
    /// dropped (it registers again if it comes back).
    mutating func workerUnreachable(_ id: WorkerID, now: Double) {
        guard sessions[id] != nil else { return }
        begin(.sendFailed)
        core.workerLost(id, at: now)
        sessions[id] = nil
    }

    /// Ends the session of a worker whose key is no longer authorized: lost for the core (fenced), told why.
    mutating func revoke(_ id: WorkerID, session: WorkerSession, now: Double) {
        begin(.keyRevoked)
        logger.warning("worker key revoked; disconnecting the worker", metadata: ["worker.id": "\(id)"])
        core.workerLost(id, at: now)
        endSession(id)
        disconnect(connection: session.identity, "this worker's key is no longer authorized by the coordinator", code: .internal)
    }

    /// Whether a message from a peer whose connection was admitted as `peerKey` may be handled as `role`
    /// now (always without CURVE). Its key may have been revoked since it connected.
    func isAuthorized(_ peerKey: String?, as role: PeerRole) -> Bool {
        configuration.curve == nil || authorizedKeys.admits(peerKey, as: role)
    }
}
