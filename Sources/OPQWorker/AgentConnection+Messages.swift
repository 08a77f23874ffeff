import Foundation
import Logging
import OPQCore
import OPQWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the connection says and how it answers: Register, Goodbye, and the coordinator's messages.
extension AgentConnection {
    /// Handles one message from the coordinator. A malformed one is logged and ignored.
    func handle(_ frames: [[UInt8]], now: Double) {
        let message: Opq_V1_CoordinatorToWorker
        do throws(WireError) {
            message = try Frames.decode(frames, as: Opq_V1_CoordinatorToWorker.self).message
        } catch {
            return ignoreMalformed(error)
        }
        handle(valid: message, now: now)
    }

    /// Handles one message a coordinator in this process passed over a direct link as it is (not
    /// encoded): validated as a decode would have, then handled as one.
    func handle(_ message: Opq_V1_CoordinatorToWorker, raw: [[UInt8]], now: Double) {
        do throws(WireError) {
            try message.validate(rawFrames: raw.count)
        } catch {
            return ignoreMalformed(error)
        }
        handle(valid: message, now: now)
    }

    private func ignoreMalformed(_ error: WireError) {
        logger.warning("ignored a malformed message from the coordinator", metadata: [
            "error": "\(error)", "field": "\(error.field ?? "")",
        ])
    }

    /// Handles one decoded and validated message from the coordinator.
    private func handle(valid message: Opq_V1_CoordinatorToWorker, now: Double) {
        agent.outputWindow.release(outbox.acknowledge(upTo: message.reportsDurable))
        let echo = Double(message.leaseEcho) / 1e6
        switch message.body {
        case .welcome(let welcome):
            guard case .registering = phase else {
                // The answer to a re-registration on this connection (a drain's zero slots).
                if case .ready = phase { renewLease(from: echo, now: now) }
                return
            }
            welcomed(interval: welcome.heartbeatIntervalSeconds, liveness: Int(welcome.liveness),
                     secret: welcome.sessionSecret, echo: echo, now: now)
            if welcome.leaseMarginSeconds > 0, welcome.leaseMarginSeconds.isFinite { fenceWait = welcome.leaseMarginSeconds }
            logger.info("registered with the coordinator", metadata: [
                "coordinator.id": "\(welcome.coordinatorID)",
                "heartbeat.seconds": "\(welcome.heartbeatIntervalSeconds)", "liveness": "\(welcome.liveness)",
            ])
        case .heartbeat, nil:
            if case .ready = phase { renewLease(from: echo, now: now) }
        case .orders(let orders):
            if case .ready = phase { renewLease(from: echo, now: now) }
            for order in orders.items {
                switch order.kind {
                case .dispatch(let dispatch): self.dispatch(dispatch)
                case .kill(let kill): self.kill(kill)
                case nil: break  // validation refuses it
                }
            }
        case .disconnect(let disconnect):
            if case .registering = phase { return refused(disconnect, now: now) }
            lose("the coordinator disconnected this worker",
                 error: "\(disconnect.code): \(disconnect.reason)", now: now)
            // It is there and asks for a registration (a restarted coordinator): at once, so the lease
            // is renewed in time — unless it disconnected this worker right after welcoming it.
            if now - welcomedAt >= interval { phase = .waiting(until: now) }
        }
    }

    /// The coordinator refused this worker's `Register`. A malformed registration (e.g. more slots than
    /// the wire allows) or an unsupported protocol is final: the worker stops and ``run()`` throws. A
    /// name held by a live session may be this worker's own previous session, not yet declared lost
    /// (a quick restart): retried once, after the coordinator's `retry_after_seconds`; refused again, it
    /// is final. Anything else is transient and retried with backoff.
    func refused(_ disconnect: Opq_V1_Disconnect, now: Double) {
        switch disconnect.code {
        case .workerNameInUse where !retriedNameInUse:
            retriedNameInUse = true
            let delay = min(max(disconnect.retryAfterSeconds, 0), 600) + 0.1
            lose("registration refused for now", error: disconnect.reason, now: now)
            phase = .waiting(until: now + delay)
            logger.warning("registration refused (transient if the other worker is gone): retrying once", metadata: [
                "reason": "\(disconnect.reason)", "retry.seconds": "\(delay)",
            ])
        case .malformedMessage, .unsupportedProtocol, .workerNameInUse:
            refusal = RegistrationRefused(reason: disconnect.reason, code: disconnect.code)
            logger.critical("registration refused; stopping", metadata: ["reason": "\(disconnect.reason)", "code": "\(disconnect.code)"])
            lose("registration refused", error: disconnect.reason, now: now)
            runner.shutdown(handBack: true, timeout: 0)
            done = true
        default:
            logger.warning("registration refused for a transient reason; retrying", metadata: [
                "reason": "\(disconnect.reason)", "code": "\(disconnect.code)",
            ])
            lose("registration refused for now", error: disconnect.reason, now: now)
        }
    }

    /// Runs a dispatched attempt, or hands it back when stopping.
    private func dispatch(_ dispatch: Opq_V1_Dispatch) {
        let key = AttemptKey(OperationID(dispatch.operation), attempt: Int(dispatch.attempt))
        guard stopLevel == .running else {
            outbox.handBack(key)
            return logger.info("handed back a dispatch: the worker is stopping", metadata: attemptMetadata(key))
        }
        var request = RunRequest(
            key, name: dispatch.name, queue: dispatch.queue, work: Work(dispatch.work),
            qualityOfService: QualityOfService(dispatch.qos),
            timeout: dispatch.hasTimeoutSeconds ? dispatch.timeoutSeconds : nil,
            killGracePeriod: dispatch.killGraceSeconds > 0 ? dispatch.killGraceSeconds : configuration.killGracePeriod)
        request.receive(dispatch.dependencies)
        switch runner.run(request) {
        case .accepted:
            logger.debug("attempt dispatched", metadata: attemptMetadata(key, ["queue": "\(dispatch.queue)", "job.id": "\(dispatch.job)"]))
        case .alreadyHeld:
            logger.debug("ignored a repeated dispatch of an attempt already held", metadata: attemptMetadata(key))
        case .shuttingDown:
            outbox.handBack(key)
            logger.info("handed back a dispatch: the worker is stopping", metadata: attemptMetadata(key))
        }
    }

    /// Stops an attempt: a timeout kill is reported `failed`/`timeout`, any other `cancelled`.
    private func kill(_ kill: Opq_V1_Kill) {
        let key = AttemptKey(OperationID(kill.operation), attempt: Int(kill.attempt))
        let cause: StopCause = kill.reason == .timeout ? .timeout : .cancel
        if runner.stop(key.operation, attempt: key.attempt, cause: cause) {
            logger.info("killing attempt", metadata: attemptMetadata(key, ["reason": "\(kill.reason)"]))
        } else {
            logger.debug("kill of an attempt not held (already finished)", metadata: attemptMetadata(key, ["reason": "\(kill.reason)"]))
        }
    }

    /// `Register`: what this worker offers and what it still holds — the runner's attempts and those
    /// whose `Finished` is still waiting to be sent. Slots are 0 once stopping.
    func registerMessage() -> Opq_V1_WorkerMessage {
        var held = Set(runner.held)  // read first: the runner posts an attempt's end before dropping it
        absorbEvents()
        outbox.resendUnconfirmed()
        held.formUnion(outbox.unsentFinished)
        held.subtract(fenced)
        let secret = sessionSecret
        let configuration = configuration
        let slots = stopLevel == .running ? Int32(clamping: configuration.slots) : 0
        let handlers = agent.handlers.names
        return .with {
            $0.register = .with {
                $0.protocolVersion = WireLimits.protocolVersion
                $0.workerName = configuration.name
                $0.slots = slots
                $0.queueSet = configuration.queues
                $0.labels = configuration.labels
                $0.announcedCpus = configuration.cpus
                $0.announcedMemory = configuration.memory
                $0.held = held.sorted().map { Opq_V1_AttemptRef($0.operation, attempt: $0.attempt) }
                $0.handlers = handlers
                $0.host = WorkerConfiguration.hostName
                $0.pid = UInt32(clamping: getpid())
                $0.sessionSecret = secret
            }
        }
    }

    /// `Goodbye`, naming every attempt handed back.
    func goodbyeMessage() -> Opq_V1_WorkerMessage {
        let reason = agent.lastStopReason
        let handedBack = outbox.handedBack
        return .with {
            $0.goodbye = .with {
                $0.reason = reason
                $0.handedBack = handedBack.map { Opq_V1_AttemptRef($0.operation, attempt: $0.attempt) }
            }
        }
    }

    /// Log metadata naming an attempt, plus `extra`.
    func attemptMetadata(_ key: AttemptKey, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        extra.merging(["operation.id": "\(key.operation.rawValue)", "attempt": "\(key.attempt)"]) { mine, _ in mine }
    }
}

/// The coordinator refused this worker's registration for good (a name in use by a live worker, a
/// registration it cannot accept): retrying would not help, so the worker stops and says why.
public struct RegistrationRefused: Error, CustomStringConvertible, Sendable {
    /// The coordinator's explanation.
    public let reason: String
    /// The coordinator's machine-readable cause.
    public let code: Opq_V1_ErrorCode

    public var description: String { "the coordinator refused to register this worker: \(reason)" }
}
