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
            logger.warning("ignored a malformed message from the coordinator", metadata: [
                "error": "\(error)", "field": "\(error.field ?? "")",
            ])
            return
        }
        outbox.acknowledge(upTo: message.reportsDurable)
        switch message.body {
        case .welcome(let welcome):
            welcomed(interval: welcome.heartbeatIntervalSeconds, liveness: Int(welcome.liveness), now: now)
            logger.info("registered with the coordinator", metadata: [
                "coordinator.id": "\(welcome.coordinatorID)",
                "heartbeat.seconds": "\(welcome.heartbeatIntervalSeconds)", "liveness": "\(welcome.liveness)",
            ])
        case .heartbeat, nil:
            break
        case .orders(let orders):
            for order in orders.items {
                switch order.kind {
                case .dispatch(let dispatch): self.dispatch(dispatch)
                case .kill(let kill): self.kill(kill)
                case nil: break  // validation refuses it
                }
            }
        case .disconnect(let disconnect):
            lose("the coordinator disconnected this worker",
                 error: "\(disconnect.code): \(disconnect.reason)", now: now)
        }
    }

    /// Runs a dispatched attempt, or hands it back when stopping.
    private func dispatch(_ dispatch: Opq_V1_Dispatch) {
        let key = AttemptKey(OperationID(dispatch.operation), attempt: Int(dispatch.attempt))
        guard stopLevel == .running else {
            outbox.handBack(key)
            return logger.info("handed back a dispatch: the worker is stopping", metadata: attemptMetadata(key))
        }
        let request = RunRequest(
            key, name: dispatch.name, work: Work(dispatch.work),
            qualityOfService: QualityOfService(dispatch.qos),
            timeout: dispatch.hasTimeoutSeconds ? dispatch.timeoutSeconds : nil,
            killGracePeriod: dispatch.killGraceSeconds > 0 ? dispatch.killGraceSeconds : configuration.killGracePeriod)
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
                $0.held = held.sorted().map { Opq_V1_AttemptRef($0.operation, attempt: $0.attempt) }
                $0.handlers = handlers
                $0.host = WorkerConfiguration.hostName
                $0.pid = UInt32(clamping: getpid())
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
