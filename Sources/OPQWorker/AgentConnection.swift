import Foundation
import Logging
import OPQCore
import OPQSpawn
import OPQWire
import ZeroMQ
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The socket thread of a ``WorkerAgent``: owns the DEALER socket and runs the connection's loop — on a
/// thread of its own (``run()``), or as a guest of another loop on that loop's thread (``HostedAgent``:
/// the workers of a one-process cluster, served by the coordinator's loop, which then carries the
/// messages over a direct link in memory instead of a socket: ``directLinks``).
///
/// Each turn: poll (the socket, the event inbox's pipe and the child monitor's epoll set, until the next
/// deadline) → drain and reap the commands that are ready (``ChildMonitor``) → take the runner's
/// events into the outbox → read every message from the coordinator → apply a stop request → run the
/// phase's timers (connect, register, heartbeats, the lease) → send all pending reports as one `Reports`
/// message → leave with `Goodbye` once a stop is complete. Not thread-safe: lives on the thread that serves it.
///
/// Leases (SEMANTICS §7): the worker may run attempts only while it holds a lease. Every message it sends
/// carries its own clock reading (`lease_request`); the coordinator echoes the latest one it received
/// (`lease_echo`), and an echo of time `t` extends the lease to `t + liveness × interval`. The coordinator
/// heard from the worker at or after `t`, so the lease ends no later than the moment the coordinator
/// declares the worker lost — both measured as durations on each side's monotonic clock, so only the
/// clocks' rate drift matters (about 1 ms over a 3 s lease). Messages that were merely delayed (the worker
/// was stopped while they queued up) echo old times and renew nothing. When the lease ends, the lease
/// watchdog (``LeaseWatchdog``, a separate process, so also while this one is stopped) kills every
/// command's process group at once, the worker stops its attempts without reporting them (the
/// coordinator gives them new attempts once the lease margin is over), and it re-registers once they
/// are gone.
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
    /// The ZeroMQ context of this connection's sockets: the agent's shared one, or its own, which is
    /// closed when ``run()`` returns (``ownsContext``).
    private let context: Context
    /// The context was made here (not shared with an in-process coordinator): ``run()`` closes it.
    private let ownsContext: Bool
    /// What carries the connection's messages: a DEALER socket, or a direct link to the coordinator
    /// whose loop serves this connection (``directLinks``).
    enum Channel {
        case socket(Socket)
        case link(DirectLink)
    }
    /// The connection's channel; nil while ``Phase/waiting(until:)``.
    var channel: Channel?
    /// The channel's socket, if it is one.
    var socket: Socket? { if case .socket(let socket)? = channel { socket } else { nil } }
    /// Set by a coordinator that serves this connection on its own loop's thread (``HostedAgent``): each
    /// connection is then a link of these (messages in memory, ``DirectLinks``), not a socket.
    var directLinks: DirectLinks?
    /// Over CURVE: the socket's handshakes, telling a refused key from no coordinator.
    private var handshakes: HandshakeWatch?
    /// Where this connection's items are in the poller that serves it (``attach(to:)``).
    struct PollItems {
        /// The inbox's pipe.
        var inbox: Int
        /// The child monitor's epoll set.
        var children: Int
        /// The socket (a negative descriptor, never ready, while there is none).
        var socket: Int
    }
    /// This connection's items in the poller that serves it.
    private var items = PollItems(inbox: 0, children: 1, socket: 2)
    /// The socket the poller's socket item holds: ``socket`` as of the last wait.
    private var polledSocket: Socket?
    /// Where the connection stands; starts by connecting at once.
    var phase = Phase.waiting(until: 0)
    /// The delays between reconnection attempts.
    private var backoff: ReconnectBackoff
    /// Heartbeat interval in seconds: the configuration's until a `Welcome` sets the coordinator's.
    var interval: Double
    /// Missed intervals before the coordinator is lost: likewise.
    var liveness: Int
    /// When the last heartbeat was sent (the next is due one interval later; the coordinator answers
    /// each at once, which renews the lease).
    private var lastHeartbeat = 0.0
    /// When the lease ends (``MonotonicClock`` seconds); nil = no lease (not welcomed yet, or it ended).
    var leaseExpiry: Double?
    /// When the current connection's `Register` was sent: a `Welcome` proves the coordinator heard it.
    var registerSentAt = 0.0
    /// Attempts stopped because the lease ended, until they are gone: never reported, and the worker
    /// re-registers only once none is left (so what it says it holds is true) — or, for a handler that
    /// ignores its cancellation (in-process code cannot be killed), once ``fenceWait`` is over.
    var fenced: Set<AttemptKey> = []
    /// How long after the lease ended the worker waits for its stopped attempts before registering
    /// without them: the coordinator's lease margin (from `Welcome`; 1 s before one).
    var fenceWait = 1.0
    /// When the lease last ended.
    var leaseEndedAt = -Double.infinity
    /// When the last `Welcome` arrived.
    var welcomedAt = -Double.infinity
    /// The secret of this worker's session (from `Welcome`), sent back when re-registering.
    var sessionSecret = Data()
    /// A `WORKER_NAME_IN_USE` refusal was already retried once since the last `Welcome`.
    var retriedNameInUse = false
    /// Why the coordinator refused to register this worker for good: ``run()`` throws it.
    var refusal: RegistrationRefused?
    /// The last send was refused (no connection up, or its queue full): poll for writable.
    private var sendBlocked = false
    /// Polls without sleeping before a wait while no command runs (``WorkerConfiguration/spin``).
    private var spinning: SpinningWait
    /// Reports not sent yet, and the attempts handed back.
    var outbox = ReportOutbox()
    /// The stop level being carried out (trails ``WorkerAgent/stopRequest`` by at most one turn).
    var stopLevel = WorkerAgent.StopLevel.running
    /// When a stop found everything reported while no coordinator was connected.
    var undeliveredSince: Double?
    /// The stop is complete: ``run()`` returns.
    var done = false
    /// Attempts whose command a SIGTERM from outside opq killed, held until `until` in case this worker
    /// is being stopped by the same hand (``AgentConnection/holdIfSignalledFromOutside(_:now:)``).
    var signalledFromOutside: [(completion: Completion, until: Double)] = []

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
        if let shared = agent.sharedContext {
            context = shared
            ownsContext = false
        } else {
            context = try Context()
            ownsContext = true
        }
        backoff = ReconnectBackoff(initial: agent.configuration.initialReconnectDelay,
                                   maximum: agent.configuration.maximumReconnectDelay)
        interval = agent.configuration.heartbeatInterval
        liveness = agent.configuration.liveness
        spinning = SpinningWait(limit: agent.configuration.spin)
    }

    /// Runs until a stop is complete, on the calling thread with a poller of its own; ``end()`` follows
    /// (``WorkerAgent/close(_:)``). Throws when the socket cannot be set up or polled at all
    /// (`ZMQError`), or when the coordinator refused the registration for good (``RegistrationRefused``).
    func run() throws {
        begin()
        var poller = Poller()
        attach(to: &poller)
        while !done {
            let timeout = try prepareWait(&poller, now: MonotonicClock.now())
            // Spinning pays off for what this process answers in microseconds (handlers, the in-process
            // coordinator's next dispatch), never while a command runs: its end is a millisecond away or
            // more, and the spinning core would be taken from it.
            let expecting = spinning.limit > .zero && !(agent.childMonitor?.isWatching ?? false)
            try poller.poll(timeout: timeout, spinning: &spinning, expecting: expecting)
            try turn(poller)
        }
        if let refusal { throw refusal }
    }

    // MARK: - Loop steps (also driven by another loop: ``HostedAgent``)

    /// Makes the calling thread this connection's: dispatched commands are spawned from it, and it serves
    /// the worker until it stops; what an attempt started here posts at once is taken before the next
    /// poll, without a wake-up. The thread gets short time slices (``OPQSpawn/LoopThread``) for good.
    func begin() {
        ChildSpawn.markThreadLongLived()
        // Its wake-ups come while its commands keep the cores busy: with short slices it runs sooner.
        if case .refused(let errno) = LoopThread.preferShortSlices() {
            logger.debug("short time slices refused", metadata: ["errno": "\(errno)"])
        }
        agent.inbox.adoptCurrentThread()
        logger.info("worker starting", metadata: ["slots": "\(configuration.slots)"])
    }

    /// Adds this connection's items to `poller`: the inbox's pipe, the child monitor's epoll set (never
    /// ready without one) and the socket's place (empty until a socket is open; ``prepareWait(_:now:)``
    /// keeps it current).
    func attach(to poller: inout Poller) {
        items = PollItems(inbox: poller.add(fileDescriptor: agent.inbox.readDescriptor),
                          children: poller.add(fileDescriptor: agent.childMonitor?.descriptor ?? -1),
                          socket: poller.add(fileDescriptor: -1))
        polledSocket = nil
    }

    /// Makes this connection's items in `poller` inert (after its last turn, in a poller it shares).
    func detach(from poller: inout Poller) {
        for index in [items.inbox, items.children, items.socket] { poller.setFileDescriptor(-1, at: index) }
        polledSocket = nil
    }

    /// Before a wait: puts the current socket in `poller` (one opened or closed since the last wait), sets
    /// what it waits for, and returns how long the wait may last in milliseconds (until the next
    /// deadline; 0 when events posted by this thread wait to be taken).
    func prepareWait(_ poller: inout Poller, now: Double) throws(ZMQError) -> Int {
        var deadline = now + 1
        switch phase {
        case .waiting(let until): deadline = min(deadline, fenced.isEmpty ? until : max(until, leaseEndedAt + fenceWait))
        case .connecting(let limit), .registering(let limit): deadline = min(deadline, limit)
        case .ready: deadline = min(deadline, lastHeartbeat + interval)
        }
        if let leaseExpiry { deadline = min(deadline, leaseExpiry) }
        if let since = undeliveredSince { deadline = min(deadline, since + window) }
        if let held = signalledFromOutside.first { deadline = min(deadline, held.until) }
        // Posted by this thread after the turn took its events (they wrote no wake-up byte).
        if agent.inbox.hasPending { deadline = now }
        // The coordinator's messages over a direct link wake no poll: read them now (and retry a send
        // refused for a full link once the coordinator has read it).
        if case .link(let link)? = channel, link.hasMessages || (sendBlocked && link.hasRoom) { deadline = now }
        if polledSocket !== socket {
            try poller.setSocket(socket, at: items.socket)
            polledSocket = socket
        }
        if socket != nil {
            var events = PollEvents.readable
            if sendBlocked { events.insert(.writable) }
            if case .connecting = phase { events.insert(.writable) }
            poller.setEvents(events, at: items.socket)
        }
        return max(0, Int(((deadline - now) * 1000).rounded(.up)))
    }

    /// One turn after a wait (`poller` holds its results): drain and reap the commands that are ready
    /// (``ChildMonitor``) → take the runner's events into the outbox → read every message from the
    /// coordinator → apply a stop request → run the phase's timers (connect, register, heartbeats, the
    /// lease) → send the pending reports as one `Reports` message → leave once a stop is complete
    /// (``done``). Throws only when a socket cannot be opened at all.
    func turn(_ poller: Poller) throws(ZMQError) {
        // Room again: this turn's sends retry (and set it again if they are still refused).
        switch channel {
        case .socket?: if poller.isWritable(items.socket) { sendBlocked = false }
        case .link(let link)?: if link.hasRoom { sendBlocked = false }
        case nil: break
        }
        // Commands' output and ends first: a `finished` posted here goes out in this turn's Reports.
        if poller.isReadable(items.children) { agent.childMonitor?.service() }
        let now = MonotonicClock.now()
        absorbEvents(pipeReadable: poller.isReadable(items.inbox))
        receiveAll(now: now)
        applyStopRequest(now: now)
        releaseSignalledFromOutside(now: now)
        try advance(now: now)
        // An attempt dispatched by this turn's orders has usually started by now (on the local
        // queue's thread): its `started` goes out in this turn's Reports, not one poll later.
        absorbEvents(pipeReadable: false)
        flush(now: now)
        finishIfStopped(now: now)
    }

    /// Closes the socket, and the context if it is this connection's own; after the last turn.
    func end() {
        closeSocket()
        if ownsContext { context.close() }
    }

    /// Moves the runner's events into the outbox — unless the lease is over: an attempt whose end the
    /// worker sees only after its lease ended may have been killed by the watchdog (or ended while the
    /// coordinator was giving it to another worker), so it is fenced and not reported. The clock is read
    /// before and after taking the events: events taken while the lease still held ended before it.
    /// `pipeReadable`: the last poll saw the inbox's pipe readable (see ``EventInbox/take(pipeReadable:)``).
    func absorbEvents(pipeReadable: Bool = true) {
        let taken = isLeaseOver ? [] : agent.inbox.take(pipeReadable: pipeReadable)
        guard isLeaseOver else { return absorb(taken) }
        leaseEnded(now: MonotonicClock.now(), taken: taken)
    }

    /// The lease has ended (by this process's clock, read now).
    private var isLeaseOver: Bool {
        guard let leaseExpiry else { return false }
        return MonotonicClock.now() >= leaseExpiry
    }

    /// Moves `events` into the outbox; those of fenced attempts are dropped.
    func absorb(_ events: [AttemptEvent]) {
        for event in events {
            if fenced.contains(event.key) {
                // Stopped because the lease ended: the coordinator gives it a new attempt; nothing is said.
                if case .output(_, let chunk) = event { agent.outputWindow.release(chunk.bytes.count) }
                if case .finished = event {
                    fenced.remove(event.key)
                    logger.info("attempt stopped by the lease's end; not reported", metadata: attemptMetadata(event.key))
                }
                continue
            }
            if case .finished(let completion) = event, holdIfSignalledFromOutside(completion, now: MonotonicClock.now()) { continue }
            outbox.add(event)
            // Metadata is passed per call (built only if the message is logged): copying the logger
            // with attempt metadata on every event cost a quarter of the worker's CPU.
            switch event {
            case .started: logger.debug("attempt started", metadata: attemptMetadata(event.key))
            case .progress: logger.trace("attempt progress", metadata: attemptMetadata(event.key))
            case .output: break
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
            let frames: [[UInt8]]?
            switch channel {
            case nil:
                return
            case .link(let link):
                switch link.receiveMessage() {
                case nil: return
                case .frames(let sent)?: frames = sent
                case let .message(message, raw)?:
                    handle(message, raw: raw, now: now)
                    continue
                }
            case .socket(let socket):
                do {
                    frames = try socket.receiveMultipart(flags: .dontWait)
                } catch {
                    return lose("receive failed", error: "\(error)", now: now)
                }
            }
            guard let frames else { return }
            handle(frames, now: now)
        }
    }

    /// Runs the current phase's timers.
    private func advance(now: Double) throws(ZMQError) {
        if let leaseExpiry, now >= leaseExpiry { leaseEnded(now: now) }
        switch phase {
        case .waiting(let until):
            guard now >= until, fenced.isEmpty || now >= leaseEndedAt + fenceWait, !done else { return }
            try openSocket(now: now)
            sendRegister(now: now)
        case .connecting(let deadline):
            if !sendRegister(now: now), now >= deadline {
                lose(keyRefused() ?? "no connection to the coordinator", error: "none within \(window) s", now: now)
            }
        case .registering(let deadline):
            if now >= deadline {
                lose(keyRefused() ?? "no Welcome from the coordinator", error: "none within \(window) s", now: now)
            }
        case .ready:
            if now - lastHeartbeat >= interval, let frames = encode(Opq_V1_WorkerMessage.heartbeat, what: "Heartbeat"),
               send(frames, now: now) {
                lastHeartbeat = now
            }
        }
    }

    /// Sends every pending report, normally as one `Reports` message (more only past the wire limits).
    func flush(now: Double) {
        while case .ready = phase, !outbox.isEmpty {
            do throws(WireError) {
                guard let next = outbox.nextReports(), try send(next.message, raw: next.raw, now: now) else { return }
                outbox.removeFirst(next.count)
            } catch {
                logger.error("a report cannot be encoded; dropping it", metadata: ["error": "\(error)"])
                outbox.removeFirst(1)
            }
        }
    }

    // MARK: - Socket

    private func openSocket(now: Double) throws(ZMQError) {
        if let directLinks {
            channel = .link(directLinks.connect())
            phase = .connecting(deadline: now + window)
            logger.debug("connecting over a direct link")
            return
        }
        let socket = try context.socket(.dealer)
        do throws(ZMQError) {
            // A fresh random routing id per connection: the coordinator binds it to this worker's session
            // at registration, and nobody else can send or receive as this session (SEMANTICS §12).
            var generator = SystemRandomNumberGenerator()
            var routingID = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            routingID[0] |= 0x80  // ids starting with a zero byte are libzmq's own
            try socket.set(.routingID, routingID)
            try socket.set(.maxMessageSize, Int64(WireLimits.maxFrameBytes))
            try socket.set(.immediate, true)
            if let serverKey = configuration.curveServerKey {
                let keys: CurveKeyPair
                if let configured = configuration.curveKeys { keys = configured } else { keys = try CurveKeyPair.generate() }
                try socket.setCurveClient(keys, serverKey: serverKey)
                handshakes = try HandshakeWatch(socket)
            }
            try socket.connect(configuration.coordinator)
        } catch {
            handshakes?.close()
            handshakes = nil
            socket.close()
            throw error
        }
        channel = .socket(socket)
        phase = .connecting(deadline: now + window)
        logger.debug("connecting")
    }

    /// Why a CURVE connection got nowhere, when its handshake failed (the socket's monitor saw it); nil
    /// when none failed (no coordinator answered, or it accepted the key).
    private func keyRefused() -> String? {
        switch handshakes?.refusalSoFar() {
        case .refused(let status):
            "the coordinator did not accept this key (ZAP status \(status)): put this worker's public key in the coordinator's "
                + "--authorized-workers directory (a client's key is not accepted there) and send the coordinator SIGHUP"
        case .handshakeFailed:
            "the coordinator did not accept this key: the CURVE handshake failed. Check that --server-key is the coordinator's public key"
        case .notCurve:
            "the coordinator did not accept this key: it does not speak CURVE (started without --curve-key?)"
        case nil:
            nil
        }
    }

    /// Sends `Register` if the phase is ``Phase/connecting(deadline:)``; returns whether it went out.
    @discardableResult
    private func sendRegister(now: Double) -> Bool {
        guard case .connecting = phase, let frames = encode(registerMessage(), what: "Register"),
              send(frames, now: now) else { return false }
        registerSentAt = now
        phase = .registering(deadline: now + window)
        logger.debug("registering")
        return true
    }

    /// Sends `message` (with the raw frames it references) without blocking: over a direct link as it is —
    /// the coordinator, in this process, validates it without a decode — else encoded for the socket. False
    /// if it was refused (kept by the caller for later); throws if it cannot be encoded.
    func send(_ message: Opq_V1_WorkerMessage, raw: [[UInt8]], now: Double) throws(WireError) -> Bool {
        guard case .link(let link)? = channel else { return send(try Frames.encode(message, raw: raw), now: now) }
        let sent = link.send(message, raw: raw)
        sendBlocked = !sent
        return sent
    }

    /// Sends one message without blocking; false if it was refused (kept by the caller for later).
    func send(_ frames: [[UInt8]], now: Double) -> Bool {
        let socket: Socket
        switch channel {
        case nil:
            return false
        case .link(let link):
            let sent = link.send(frames)
            sendBlocked = !sent
            return sent
        case .socket(let open):
            socket = open
        }
        do {
            let sent = try socket.send(frames, flags: .dontWait) == .sent
            sendBlocked = !sent
            return sent
        } catch {
            lose("send failed", error: "\(error)", now: now)
            return false
        }
    }

    /// Encodes an outgoing message; nil (logged) if it cannot be, which only a bug can cause.
    func encode(_ message: Opq_V1_WorkerMessage, what: String) -> [[UInt8]]? {
        var message = message
        message.leaseRequest = UInt64(MonotonicClock.now() * 1e6)
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

    /// A `Welcome` arrived: the connection is up, and the lease runs from the `Register` it answers.
    func welcomed(interval: Double, liveness: Int, secret: Data, echo: Double, now: Double) {
        self.interval = interval
        self.liveness = liveness
        sessionSecret = secret
        retriedNameInUse = false
        backoff.reset()
        undeliveredSince = nil
        phase = .ready
        welcomedAt = now
        lastHeartbeat = now
        renewLease(from: max(echo, registerSentAt), now: now)
    }

    /// The coordinator echoed a `lease_request` sent at `start`: the lease runs to `start + liveness ×
    /// interval` (never shortened; an echo from the future is not ours and renews nothing).
    ///
    /// The watchdog is told every new end, and this worker's ``leaseExpiry`` is always the end the
    /// watchdog was last told: it never kills a command the worker still believes leased. Renewals
    /// closer than 50 ms (or a twentieth of the lease) to the current end are skipped, so a stream of
    /// orders costs the watchdog a message at most every 50 ms.
    func renewLease(from start: Double, now: Double) {
        guard start > 0, start <= now else { return }
        let lease = Double(liveness) * interval
        let expiry = start + lease
        guard expiry > (leaseExpiry ?? -Double.infinity) + min(0.05, lease / 20) else { return }
        leaseExpiry = expiry
        agent.leaseWatchdog?.renew(remaining: expiry - MonotonicClock.now())
    }

    /// The lease ended: every command was killed by the watchdog at this moment (told again here, in
    /// case it was late), each held attempt is stopped and will not be reported, and the connection is
    /// dropped; the worker registers again once they are all gone.
    ///
    /// Fenced: every attempt held now and every one whose events were not absorbed yet (`taken`, and
    /// what the inbox holds). The runner is read before the inbox: it posts an attempt's end before it
    /// stops holding it, so no attempt slips between the two.
    func leaseEnded(now: Double, taken: [AttemptEvent] = []) {
        leaseExpiry = nil
        leaseEndedAt = now
        agent.leaseWatchdog?.renew(remaining: 0)
        agent.outputWindow.reset()
        let held = runner.held
        let events = taken + agent.inbox.take()
        let stopped = Set(held).union(events.map(\.key)).subtracting(fenced)
        fenced.formUnion(stopped)
        for key in held where stopped.contains(key) {
            runner.stop(key.operation, attempt: key.attempt, cause: .handBack)
        }
        absorb(events)
        if !stopped.isEmpty {
            logger.warning("lease ended: no answer from the coordinator in time; attempts killed and not reported", metadata: [
                "attempts": "\(stopped.count)", "lease.seconds": "\(Double(liveness) * interval)",
            ])
        }
        if case .waiting = phase { return }
        lose("the coordinator went silent", error: "its lease of \(Double(liveness) * interval) s ended", now: now)
    }

    private func closeSocket() {
        guard let channel else { return }
        handshakes?.close()
        handshakes = nil
        self.channel = nil
        sendBlocked = false
        switch channel {
        case .socket(let socket): socket.close()
        case .link(let link): link.close()
        }
    }
}
