#if canImport(Glibc)
import Glibc
#endif
import Logging
import OPQCore
import OPQJournal
import OPQWire
import ZeroMQ

/// The coordinator: one event-loop thread that owns both ROUTER sockets and the scheduling core
/// (DESIGN.md "Coordinator loop"). Each turn: poll (timeout = the next deadline) → drain messages →
/// feed the core → journal the turn's changes in one transaction → only then send acknowledgements,
/// dispatches and events. Sends never block (`DONTWAIT`); a worker that cannot take a message is
/// treated as lost.
///
/// With a state directory (``CoordinatorConfiguration/stateDirectory``) the coordinator starts by
/// replaying its journal (`Coordinator+Journal.swift`), so an acknowledged submission is never lost and a
/// finished operation never runs again (SEMANTICS §10).
///
/// Only ``run()``'s thread touches the sockets and the core; ``stop()`` may be called from any thread.
public final class Coordinator: @unchecked Sendable {
    let configuration: CoordinatorConfiguration
    let logger: Logger
    let context: Context
    let workersSocket: Socket
    let clientsSocket: Socket
    /// The ZAP handler admitting CURVE peers (nil without CURVE).
    let zap: ZAP?
    /// The public keys admitted per socket (CURVE); reloaded on SIGHUP (``reload()``).
    var authorizedKeys = AuthorizedKeys()
    /// The endpoint workers connect to, as bound (a `*` port resolved).
    public let workersEndpoint: String
    /// The endpoint clients connect to, as bound.
    public let clientsEndpoint: String

    var core: Scheduler
    let clock = MonotonicClock()
    var effects: [Effect] = []
    /// Registered workers by name.
    var sessions: [WorkerID: WorkerSession] = [:]
    /// The worker each session's connection (routing id) belongs to.
    var workerIdentities: [[UInt8]: WorkerID] = [:]
    /// Orders to send each worker at the end of the turn.
    var orders: [WorkerID: [Opq_V1_Order]] = [:]
    /// Messages to send workers (Welcome, Disconnect, heartbeats) at the end of the turn.
    var workerOutbox: [(WorkerID, Opq_V1_CoordinatorToWorker)] = []
    /// Messages to send clients at the end of the turn, after the turn's effects are carried out.
    var clientOutbox: [[[UInt8]]] = []
    /// Messages clients could not take yet, retried every turn (``ClientOutbox``: never drops a reply
    /// to an applied request; refuses requests from a client that does not read its replies).
    var clientBacklog: ClientOutbox
    var events: EventLog
    var watchers: [Watcher.Key: Watcher] = [:]
    var waiters: [Waiter] = []
    var outputs: OutputStore
    /// Every byte of commands' output, in files (``OutputSpool``).
    let spool: OutputSpool
    /// Receipts of submissions that carried an idempotency key.
    var receipts: [String: SubmissionReceipt] = [:]
    /// The state directory and journal; nil when running without one.
    var durability: Durability?
    /// True when something finished this turn (waiters need a look).
    var somethingFinished = false
    /// Identifies this coordinator instance to workers.
    let instanceID: String
    /// Metrics and dashboard state, when snapshots are published (`Coordinator+Snapshot.swift`).
    var telemetry: Telemetry?

    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// Takes the state directory and replays its journal, then binds both endpoints. Fails with a clear
    /// error for a locked, damaged or unreadable state directory (``JournalError``), a non-loopback
    /// address, or an endpoint in use.
    public init(configuration: CoordinatorConfiguration, logger: Logger) throws {
        if let problem = configuration.problem { throw ConfigurationError(description: problem) }
        // Without CURVE keys only loopback and ipc:// may be bound; with them every peer is authenticated.
        let workersEndpoint = try EndpointPolicy.bindable(configuration.workersEndpoint, allowNonLoopback: configuration.curve != nil)
        let clientsEndpoint = try EndpointPolicy.bindable(configuration.clientsEndpoint, allowNonLoopback: configuration.curve != nil)
        var coreConfiguration = Scheduler.Configuration()
        coreConfiguration.workerTimeout = configuration.heartbeatInterval * Double(configuration.liveness)
        // Leases: attempts recovered from the journal may still run on a worker of the previous
        // coordinator until that worker's lease runs out, so they wait at least a lease and its margin.
        var configuration = configuration
        configuration.recoveryGrace = max(configuration.recoveryGrace, coreConfiguration.workerTimeout + coreConfiguration.leaseMargin)
        self.configuration = configuration
        self.logger = logger
        core = Scheduler(configuration: coreConfiguration)
        events = EventLog(capacity: configuration.eventHistory, byteBudget: configuration.eventHistoryBytes)
        outputs = OutputStore(budget: configuration.outputBudget)
        clientBacklog = ClientOutbox(maxMessages: configuration.clientBacklogMessages, maxBytes: configuration.clientBacklogBytes)
        instanceID = "\(getpid())-\(UInt64(MonotonicClock().now() * 1000))"
        if let path = configuration.stateDirectory {
            durability = try Coordinator.openState(path, configuration: configuration, core: &core, outputs: &outputs,
                                                   receipts: &receipts, logger: logger)
        }
        spool = try OutputSpool(directory: configuration.stateDirectory.map { $0 + "/output" },
                                capPerStream: UInt64(configuration.outputSpoolCap), budget: UInt64(configuration.outputSpoolBudget))

        context = try Context()
        if let curve = configuration.curve {
            authorizedKeys = try AuthorizedKeys(loading: curve)
            zap = try ZAP(context: context)
        } else {
            zap = nil
        }
        workersSocket = try context.socket(.router)
        clientsSocket = try context.socket(.router)
        if let curve = configuration.curve {
            for (socket, role) in [(workersSocket, PeerRole.worker), (clientsSocket, .client)] {
                try socket.setCurveServer(curve.keys)
                try socket.set(.zapDomain, role.rawValue)
            }
        }
        for socket in [workersSocket, clientsSocket] {
            try socket.set(.routerMandatory, true)
            try socket.set(.maxMessageSize, Int64(WireLimits.maxFrameBytes))
            try socket.set(.linger, 0)
            // Thousands of clients or workers may connect at once (libzmq's default listen queue is 100).
            try socket.set(.backlog, Coordinator.listenBacklog)
        }
        // A second connection with a live connection's routing id gets nothing (libzmq leaves it
        // unidentified and reads none of its messages) instead of taking the traffic over.
        try workersSocket.set(.routerHandover, false)
        // Clients come and go: TCP keepalive notices a vanished watcher's machine (a closed connection is
        // noticed anyway). Not ZMTP heartbeats: with them libzmq 4.3.4 aborts when a client hangs up with
        // a full pipe (docs/known-issues.md, PeerDisconnectTests).
        try clientsSocket.set(.tcpKeepalive, 1)
        try clientsSocket.set(.tcpKeepaliveIdle, 10)
        try clientsSocket.set(.tcpKeepaliveInterval, 2)
        try clientsSocket.set(.tcpKeepaliveCount, 3)
        self.workersEndpoint = try workersSocket.bind(workersEndpoint)
        self.clientsEndpoint = try clientsSocket.bind(clientsEndpoint)

        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ZMQError(call: "pipe", code: errno) }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        _ = fcntl(wakeRead, F_SETFL, fcntl(wakeRead, F_GETFL) | O_NONBLOCK)
        _ = fcntl(wakeWrite, F_SETFL, fcntl(wakeWrite, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
        context.close()
    }

    /// Asks the loop to shut down; safe from any thread and from signal handlers, and safe twice.
    public func stop() {
        var byte = Self.stopByte
        _ = write(wakeWrite, &byte, 1)
    }

    /// Asks the loop to reread the authorized key directories (SIGHUP; see ``reloadAuthorizedKeys(now:)``).
    public func reload() {
        var byte = Self.reloadByte
        _ = write(wakeWrite, &byte, 1)
    }

    private static let stopByte: UInt8 = 1
    private static let reloadByte: UInt8 = 2

    /// Empties the wake pipe: true if a stop was asked; a reload asked is carried out.
    private func wokenToStop(now: Double) -> Bool {
        var bytes = [UInt8](repeating: 0, count: 64)
        var stopping = false, reloading = false
        while case let count = read(wakeRead, &bytes, bytes.count), count > 0 {
            stopping = stopping || bytes[..<count].contains(Self.stopByte)
            reloading = reloading || bytes[..<count].contains(Self.reloadByte)
        }
        if reloading && !stopping { reloadAuthorizedKeys(now: now) }
        return stopping
    }

    /// Runs the event loop until ``stop()``; then tells the workers and closes the sockets.
    public func run() throws {
        var poller = Poller()
        let workers = try poller.add(workersSocket)
        let clients = try poller.add(clientsSocket)
        let wake = poller.add(fileDescriptor: wakeRead)
        let zapItem = try zap.map { zap throws(ZMQError) in try poller.add(zap.socket) }
        logger.info("coordinator listening", metadata: ["workers": "\(workersEndpoint)", "clients": "\(clientsEndpoint)"])
        startRecoveryGrace(now: clock.now())
        while true {
            try poller.poll(timeout: pollTimeout())
            let now = clock.now()
            if poller.isReadable(wake), wokenToStop(now: now) { break }
            if let zapItem, poller.isReadable(zapItem) { try answerZAP() }
            if poller.isReadable(workers) { try drain(workersSocket, now: now, handle: handleWorkerMessage) }
            if poller.isReadable(clients) { try drain(clientsSocket, now: now, handle: handleAuthenticatedClientMessage) }
            core.tick(at: now)
            checkRecoveryGrace(now: now)
            dropLostSessions()
            sendHeartbeats(now: now)
            expireWaiters(now: now)
            try flush(now: now)
            observeTurn(now: now)
        }
        try shutdown()
    }

    /// `ZMQ_BACKLOG` of both listening sockets (the kernel caps it at `net.core.somaxconn`).
    static let listenBacklog: Int32 = 4_096

    /// Seconds between retries of replies a client could not take yet.
    static let backlogRetryInterval = 0.01

    /// Handles up to `messagesPerTurn` messages waiting on `socket`, each with its connection's CURVE
    /// public key (the ZAP user id; nil without CURVE).
    private func drain(_ socket: Socket, now: Double, handle: ([[UInt8]], String?, Double) throws -> Void) throws {
        let property: MessageProperty? = zap == nil ? nil : .userID
        for _ in 0..<configuration.messagesPerTurn {
            guard let (frames, peerKey) = try socket.receiveMultipart(flags: .dontWait, property: property) else { return }
            telemetry?.totals.messagesReceived &+= 1
            try handle(frames, peerKey, now)
        }
    }

    /// Milliseconds until the next deadline: the core's, a heartbeat, or a waiter's timeout.
    private func pollTimeout() -> Int {
        let now = clock.now()
        var deadline = now + configuration.heartbeatInterval
        if let next = core.nextDeadline { deadline = min(deadline, next) }
        for session in sessions.values { deadline = min(deadline, session.lastSent + configuration.heartbeatInterval) }
        for waiter in waiters { if let timeout = waiter.deadline { deadline = min(deadline, timeout) } }
        if let recovery = durability?.recoveryDeadline { deadline = min(deadline, recovery) }
        if !clientBacklog.isEmpty { deadline = min(deadline, now + Coordinator.backlogRetryInterval) }
        if let publish = telemetry?.nextPublish { deadline = min(deadline, publish) }
        return max(0, Int(((deadline - now) * 1000).rounded(.up)))
    }

    private func shutdown() throws {
        logger.info("coordinator shutting down", metadata: ["workers": "\(sessions.count)"])
        if try !absorbAndCommit() {
            logger.warning("journal disk still full: records not journaled are dropped (none was acknowledged; workers keep their finishes)")
        }
        for session in sessions.values {
            var message = Opq_V1_CoordinatorToWorker()
            message.disconnect.reason = "coordinator shutting down"
            message.disconnect.code = .internal
            send(message, to: session.id)
        }
        workersSocket.close()
        clientsSocket.close()
        zap?.close()
        spool.close()
        durability?.directory.unlock()
    }
}
