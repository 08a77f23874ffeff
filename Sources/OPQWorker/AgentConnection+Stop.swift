import Logging
import OPQWire

/// Stopping: a graceful drain, then a hand back, then `Goodbye` (``WorkerAgent/stop(handBack:reason:)``).
extension AgentConnection {
    /// Carries out a stop level newly asked for.
    func applyStopRequest(now: Double) {
        let requested = agent.stopRequest
        guard requested > stopLevel else { return }
        stopLevel = requested
        switch requested {
        case .running:
            return
        case .draining:
            logger.notice("stopping: taking no new work, letting running attempts finish",
                          metadata: ["attempts": "\(runner.held.count)"])
            runner.shutdown(handBack: false, timeout: 0)
            // Tell the coordinator to send nothing more (a re-registration with no slots).
            if case .ready = phase, let frames = encode(registerMessage(), what: "Register") { _ = send(frames, now: now) }
        case .handingBack:
            logger.notice("stopping now: stopping running attempts and handing them back",
                          metadata: ["attempts": "\(runner.held.count)"])
            agent.outputWindow.open()  // attempts being killed must not wait for acknowledgements
            runner.shutdown(handBack: true, timeout: 0)
        }
        if case .waiting = phase { phase = .waiting(until: now) }  // one more try at once to say goodbye
    }

    /// Ends the loop once a stop has nothing left to wait for: every attempt reported, the reports and
    /// the `Goodbye` sent — or no coordinator reachable for one more ``window``.
    func finishIfStopped(now: Double) {
        guard stopLevel > .running, runner.held.isEmpty, signalledFromOutside.isEmpty else { return }
        absorbEvents()  // the runner posts an attempt's last event before it stops holding it
        if case .ready = phase {
            flush(now: now)
            guard outbox.isEmpty, let frames = encode(goodbyeMessage(), what: "Goodbye"), send(frames, now: now) else { return }
            logger.notice("stopped: said goodbye to the coordinator",
                          metadata: ["handed.back": "\(outbox.handedBack.count)"])
            try? socket?.set(.linger, 1_000)  // let the Goodbye leave before the context ends
            done = true
        } else if outbox.isEmpty, outbox.handedBack.isEmpty, !isRegistering {
            logger.notice("stopped (not connected to a coordinator; nothing left to report)")
            done = true
        } else if let since = undeliveredSince, now - since >= window {
            logger.warning("stopped without reaching the coordinator; it will find this worker lost", metadata: [
                "reports.undelivered": "\(outbox.items.count)", "handed.back": "\(outbox.handedBack.count)",
            ])
            done = true
        } else if undeliveredSince == nil {
            undeliveredSince = now
        }
    }

    /// A `Register` is out and unanswered: the coordinator may count this worker in, so a stop waits
    /// for the `Welcome` (within ``window``) to say goodbye.
    private var isRegistering: Bool { if case .registering = phase { true } else { false } }
}
