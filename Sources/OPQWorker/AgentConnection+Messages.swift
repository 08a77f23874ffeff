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
        let log = logger(for: key)
        guard stopLevel == .running else {
            outbox.handBack(key)
            return log.info("handed back a dispatch: the worker is stopping")
        }
        let request = RunRequest(
            key, name: dispatch.name, work: Work(dispatch.work),
            qualityOfService: QualityOfService(dispatch.qos),
            timeout: dispatch.hasTimeoutSeconds ? dispatch.timeoutSeconds : nil,
            killGracePeriod: dispatch.killGraceSeconds > 0 ? dispatch.killGraceSeconds : configuration.killGracePeriod)
        switch runner.run(request) {
        case .accepted:
            log.debug("attempt dispatched", metadata: ["queue": "\(dispatch.queue)", "job.id": "\(dispatch.job)"])
        case .alreadyHeld:
            log.debug("ignored a repeated dispatch of an attempt already held")
        case .shuttingDown:
            outbox.handBack(key)
            log.info("handed back a dispatch: the worker is stopping")
        }
    }

    /// Stops an attempt: a timeout kill is reported `failed`/`timeout`, any other `cancelled`.
    private func kill(_ kill: Opq_V1_Kill) {
        let key = AttemptKey(OperationID(kill.operation), attempt: Int(kill.attempt))
        let cause: StopCause = kill.reason == .timeout ? .timeout : .cancel
        let log = logger(for: key)
        if runner.stop(key.operation, attempt: key.attempt, cause: cause) {
            log.info("killing attempt", metadata: ["reason": "\(kill.reason)"])
        } else {
            log.debug("kill of an attempt not held (already finished)", metadata: ["reason": "\(kill.reason)"])
        }
    }

    /// `Register`: what this worker offers and what it still holds — the runner's attempts and those
    /// whose `Finished` is still waiting to be sent. Slots are 0 once stopping.
    func registerMessage() -> Opq_V1_WorkerMessage {
        var held = Set(runner.held)  // read first: the runner posts an attempt's end before dropping it
        absorbEvents()
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

    /// The connection's logger with the attempt's metadata.
    private func logger(for key: AttemptKey) -> Logger {
        var log = logger
        log[metadataKey: "operation.id"] = "\(key.operation.rawValue)"
        log[metadataKey: "attempt"] = "\(key.attempt)"
        return log
    }
}
