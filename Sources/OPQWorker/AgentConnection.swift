import Foundation
import Logging
import OPQCore
import OPQWire
import ZeroMQ
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The socket thread of a ``WorkerAgent``: owns the DEALER socket and runs the connection's loop.
///
/// Each turn: poll (the socket and the event inbox's pipe, until the next deadline) → take the runner's
/// events into the outbox → read every message from the coordinator → apply a stop request → run the
/// phase's timers (connect, register, heartbeats, liveness) → send all pending reports as one `Reports`
/// message → leave with `Goodbye` once a stop is complete. Not thread-safe: lives on `run()`'s thread.
final class AgentConnection {
    /// Where the connection stands. Times are ``MonotonicClock`` seconds.
    enum Phase {
        /// No socket: (re)connect at `until`.
        case waiting(until: Double)
        /// Socket connecting; `Register` not sent yet because no connection is up (`ZMQ_IMMEDIATE`).
        /// Gives up (and backs off) at `deadline`.
        case connecting(deadline: Double)
        /// `Register` sent; waiting for `Welcome` until `deadline`.
        case registering(deadline: Double)
        /// Welcomed: orders, reports and heartbeats flow.
        case ready
    }

    /// The agent served: configuration, runner, inbox, stop requests.
    let agent: WorkerAgent
    /// The agent's logger with the coordinator endpoint in its metadata.
    let logger: Logger
    /// The ZeroMQ context of this connection's sockets; closed when ``run()`` returns.
    private let context: Context
    /// The DEALER socket; nil while ``Phase/waiting(until:)``.
    var socket: Socket?
    /// Polls the inbox's pipe (item 0) and the socket, when there is one.
    private var poller = Poller()
    /// The socket's index in ``poller``.
    private var socketItem: Int?
    /// Where the connection stands; starts by connecting at once.
    var phase = Phase.waiting(until: 0)
    /// The delays between reconnection attempts.
    private var backoff: ReconnectBackoff
    /// Heartbeat interval in seconds: the configuration's until a `Welcome` sets the coordinator's.
    var interval: Double
    /// Missed intervals before the coordinator is lost: likewise.
    var liveness: Int
    /// When anything was last sent (a heartbeat is due one interval later).
    private var lastSent = 0.0
    /// When anything was last received (the coordinator is lost liveness × interval later).
    private var lastReceived = 0.0
    /// The last send was refused (no connection up, or its queue full): poll for writable.
    private var sendBlocked = false
    /// Reports not sent yet, and the attempts handed back.
    var outbox = ReportOutbox()
    /// The stop level being carried out (trails ``WorkerAgent/stopRequest`` by at most one turn).
    var stopLevel = WorkerAgent.StopLevel.running
    /// When a stop found everything reported while no coordinator was connected.
    var undeliveredSince: Double?
    /// The stop is complete: ``run()`` returns.
    var done = false

    var configuration: WorkerConfiguration { agent.configuration }
    var runner: AttemptRunner { agent.runner }
    /// How long connecting plus registering may take, and how long a stopped worker keeps trying to
    /// deliver its last reports: the configured liveness × interval.
    var window: Double { Double(configuration.liveness) * configuration.heartbeatInterval }

    init(agent: WorkerAgent) throws(ZMQError) {
        self.agent = agent
        var logger = agent.logger
        logger[metadataKey: "coordinator.endpoint"] = .string(agent.configuration.coordinator)
        self.logger = logger
        context = try Context()
        backoff = ReconnectBackoff(initial: agent.configuration.initialReconnectDelay,
                                   maximum: agent.configuration.maximumReconnectDelay)
        interval = agent.configuration.heartbeatInterval
        liveness = agent.configuration.liveness
    }

    /// Runs until a stop is complete. Throws only when the socket cannot be set up or polled at all.
    func run() throws(ZMQError) {
        defer {
            closeSocket()
            context.close()
        }
        rebuildPoller()
        logger.info("worker starting", metadata: ["slots": "\(configuration.slots)"])
        while !done {
            try poll(now: MonotonicClock.now())
            let now = MonotonicClock.now()
            absorbEvents()
            receiveAll(now: now)
            applyStopRequest(now: now)
            try advance(now: now)
            // An attempt dispatched by this turn's orders has usually started by now (on the local
            // queue's thread): its `started` goes out in this turn's Reports, not one poll later.
            absorbEvents()
            flush(now: now)
            finishIfStopped(now: now)
        }
    }

    // MARK: - Loop steps

    private func poll(now: Double) throws(ZMQError) {
        var deadline = now + 1
        switch phase {
        case .waiting(let until): deadline = min(deadline, until)
        case .connecting(let limit), .registering(let limit): deadline = min(deadline, limit)
        case .ready: deadline = min(deadline, lastSent + interval, lastReceived + Double(liveness) * interval)
        }
        if let since = undeliveredSince { deadline = min(deadline, since + window) }
        if let socketItem {
            var events = PollEvents.readable
            if sendBlocked { events.insert(.writable) }
            if case .connecting = phase { events.insert(.writable) }
            poller.setEvents(events, at: socketItem)
        }
        try poller.poll(timeout: max(0, Int(((deadline - now) * 1000).rounded(.up))))
        // Room again: this turn's sends retry (and set it again if they are still refused).
        if let socketItem, poller.isWritable(socketItem) { sendBlocked = false }
    }

    /// Moves the runner's events into the outbox.
    func absorbEvents() {
        for event in agent.inbox.take() {
            outbox.add(event)
            // Metadata is passed per call (built only if the message is logged): copying the logger
            // with attempt metadata on every event cost a quarter of the worker's CPU.
            switch event {
            case .started: logger.debug("attempt started", metadata: attemptMetadata(event.key))
            case .progress: logger.trace("attempt progress", metadata: attemptMetadata(event.key))
            case .finished(let completion):
                logger.debug("attempt finished", metadata: attemptMetadata(event.key, [
                    "status": "\(completion.report.status)", "handed.back": "\(completion.handedBack)",
                ]))
            }
        }
    }

    private func receiveAll(now: Double) {
        // Bounded per turn, so a flood of orders cannot starve reports and heartbeats.
        for _ in 0..<1_000 {
            guard let socket else { return }
            let frames: [[UInt8]]?
            do {
                frames = try socket.receiveMultipart(flags: .dontWait)
            } catch {
                return lose("receive failed", error: "\(error)", now: now)
            }
            guard let frames else { return }
            lastReceived = now  // any message counts as the coordinator's heartbeat, even a bad one
            handle(frames, now: now)
        }
    }

    /// Runs the current phase's timers.
    private func advance(now: Double) throws(ZMQError) {
        switch phase {
        case .waiting(let until):
            guard now >= until else { return }
            try openSocket(now: now)
            sendRegister(now: now)
        case .connecting(let deadline):
            if !sendRegister(now: now), now >= deadline {
                lose("no connection to the coordinator", error: "none within \(window) s", now: now)
            }
        case .registering(let deadline):
            if now >= deadline { lose("no Welcome from the coordinator", error: "none within \(window) s", now: now) }
        case .ready:
            if now - lastReceived >= Double(liveness) * interval {
                lose("the coordinator went silent", error: "nothing for \(Double(liveness) * interval) s", now: now)
            } else if now - lastSent >= interval, outbox.isEmpty,  // pending reports go out this turn instead
                      let frames = encode(Opq_V1_WorkerMessage.heartbeat, what: "Heartbeat") {
                _ = send(frames, now: now)
            }
        }
    }

    /// Sends every pending report, normally as one `Reports` message (more only past the wire limits).
    func flush(now: Double) {
        while case .ready = phase, !outbox.isEmpty {
            do throws(WireError) {
                guard let next = try outbox.nextMessage(), send(next.frames, now: now) else { return }
                outbox.removeFirst(next.count)
            } catch {
                logger.error("a report cannot be encoded; dropping it", metadata: ["error": "\(error)"])
                outbox.removeFirst(1)
            }
        }
    }

    // MARK: - Socket

    private func openSocket(now: Double) throws(ZMQError) {
        let socket = try context.socket(.dealer)
        do throws(ZMQError) {
            try socket.set(.routingID, Array(configuration.name.utf8))
            try socket.set(.maxMessageSize, Int64(WireLimits.maxFrameBytes))
            try socket.set(.immediate, true)
            if let serverKey = configuration.curveServerKey {
                let keys: CurveKeyPair
                if let configured = configuration.curveKeys { keys = configured } else { keys = try CurveKeyPair.generate() }
                try socket.setCurveClient(keys, serverKey: serverKey)
            }
            try socket.connect(configuration.coordinator)
        } catch {
            socket.close()
            throw error
        }
        self.socket = socket
        rebuildPoller()
        phase = .connecting(deadline: now + window)
        logger.debug("connecting")
    }

    /// Sends `Register` if the phase is ``Phase/connecting(deadline:)``; returns whether it went out.
    @discardableResult
    private func sendRegister(now: Double) -> Bool {
        guard case .connecting = phase, let frames = encode(registerMessage(), what: "Register"),
              send(frames, now: now) else { return false }
        phase = .registering(deadline: now + window)
        logger.debug("registering")
        return true
    }

    /// Sends one message without blocking; false if it was refused (kept by the caller for later).
    func send(_ frames: [[UInt8]], now: Double) -> Bool {
        guard let socket else { return false }
        do {
            let sent = try socket.send(frames, flags: .dontWait) == .sent
            sendBlocked = !sent
            if sent { lastSent = now }
            return sent
        } catch {
            lose("send failed", error: "\(error)", now: now)
            return false
        }
    }

    /// Encodes an outgoing message; nil (logged) if it cannot be, which only a bug can cause.
    func encode(_ message: Opq_V1_WorkerMessage, what: String) -> [[UInt8]]? {
        do throws(WireError) {
            return try Frames.encode(message)
        } catch {
            logger.error("cannot encode an outgoing message", metadata: ["message": "\(what)", "error": "\(error)"])
            return nil
        }
    }

    /// The coordinator is gone (or refused us): close the socket and try again after the next backoff delay.
    func lose(_ what: String, error: String, now: Double) {
        closeSocket()
        let delay = backoff.take()
        phase = .waiting(until: now + delay)
        logger.warning("lost the coordinator; reconnecting", metadata: [
            "reason": "\(what)", "detail": "\(error)", "retry.seconds": "\(delay)",
        ])
    }

    /// A `Welcome` arrived: the connection is up.
    func welcomed(interval: Double, liveness: Int, now: Double) {
        self.interval = interval
        self.liveness = liveness
        lastReceived = now
        backoff.reset()
        undeliveredSince = nil
        phase = .ready
    }

    private func closeSocket() {
        guard let socket else { return }
        self.socket = nil
        sendBlocked = false
        rebuildPoller()
        socket.close()
    }

    private func rebuildPoller() {
        poller = Poller()
        poller.add(fileDescriptor: agent.inbox.readDescriptor)
        socketItem = socket.flatMap { try? poller.add($0) }
    }
}
