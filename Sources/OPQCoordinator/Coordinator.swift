#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import OPQCore
import OPQJournal
import OPQSpawn
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
// @unchecked Sendable: everything mutable (`state`, `durability`, `telemetry`, the sockets) belongs to the thread in `run()`; `stop()`, the one call from other threads, only writes a byte to the wake pipe.
public final class Coordinator: @unchecked Sendable {
    let configuration: CoordinatorConfiguration
    let logger: Logger
    /// The ZeroMQ context of the coordinator's sockets. Workers on threads of this process use it to
    /// connect to ``CoordinatorConfiguration/inProcessWorkersEndpoint`` (an `inproc://` endpoint is
    /// reachable only from sockets of the context that bound it).
    public let context: Context
    let workersSocket: Socket
    let clientsSocket: Socket
    /// The ZAP handler admitting CURVE peers (nil without CURVE).
    let zap: ZAP?
    /// The endpoint workers connect to, as bound (a `*` port resolved).
    public let workersEndpoint: String
    /// The endpoint clients connect to, as bound.
    public let clientsEndpoint: String
    /// The links of the workers this loop's thread serves (``host(_:)``), which carry their messages in
    /// memory instead of over ``CoordinatorConfiguration/inProcessWorkersEndpoint``; there only when that
    /// endpoint is configured (never with CURVE: no link carries a key). Read each turn like a socket.
    public let directLinks: DirectLinks?

    /// Everything the coordinator knows and decides: the core, sessions, watchers, waiters, receipts,
    /// the client backlog (``CoordinatorState``, a pure state machine). This class is its socket loop.
    var state: CoordinatorState
    let clock = MonotonicClock()
    /// Every byte of commands' output, in files (``OutputSpool``).
    let spool: OutputSpool
    /// The state directory and journal; nil when running without one.
    var durability: Durability?
    /// Metrics and dashboard state, when snapshots are published (`Coordinator+Snapshot.swift`).
    var telemetry: Telemetry?
    /// Free heap pages given back after big submissions (``HeapTrim``).
    private var heapTrim = HeapTrim()
    /// This turn dispatched handler work: its finish may come within microseconds (from a worker in this
    /// process), so the next poll spins first (``CoordinatorConfiguration/spin``).
    var dispatchedInProcessWork = false

    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Loops served by this one's thread (``host(_:)``): polled with the coordinator's sockets, each given
    /// a turn after every wait, until it ends.
    private var guests: [any PollGuest] = []

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
        var core = Scheduler(configuration: coreConfiguration)
        var recovered: RecoveredState?
        if let path = configuration.stateDirectory {
            (durability, recovered) = try Coordinator.openState(path, configuration: configuration, core: &core, logger: logger)
        }
        state = CoordinatorState(configuration: configuration, core: core, instanceID: "\(getpid())-\(UInt64(MonotonicClock().now() * 1000))",
                                 isDurable: durability != nil, logger: logger, makeSecret: Coordinator.randomSecret)
        state.receipts = recovered?.receipts ?? [:]
        state.jobFinishedAt = recovered?.jobFinishedAt ?? [:]
        var outputs = OutputStore(budget: configuration.outputBudget)
        var results = ResultStore()
        try durability?.journal.forEachOutput { id, output in
            outputs.record(output.withoutResult, for: id)
            results.record(output.result, for: id)
        }
        state.outputs = outputs
        state.results = results
        spool = try OutputSpool(directory: configuration.stateDirectory.map { $0 + "/output" },
                                capPerStream: UInt64(configuration.outputSpoolCap), budget: UInt64(configuration.outputSpoolBudget))

        context = try Context()
        if let curve = configuration.curve {
            state.authorizedKeys = try AuthorizedKeys(loading: curve)
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
        if let inProcess = configuration.inProcessWorkersEndpoint { try workersSocket.bind(inProcess) }
        directLinks = configuration.inProcessWorkersEndpoint == nil ? nil : DirectLinks()

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

    /// Serves `guest` on the loop's thread from the first turn on (the workers of a one-process cluster:
    /// a command's end, the next dispatch and its spawn then take no thread wake-up). Call before
    /// ``run()``, from the thread that will call it.
    public func host(_ guest: any PollGuest) {
        guests.append(guest)
    }

    /// Runs the event loop until ``stop()``; then tells the workers and closes the sockets. Each turn:
    /// poll until the next wake-up → hand each message to the state machine and carry out what it asks at
    /// once → let time pass → finish the turn (journal, commit, sends) → publish telemetry. The calling
    /// thread keeps the short time slices the loop asks for (``OPQSpawn/LoopThread``) after it returns.
    public func run() throws {
        var poller = Poller()
        let workers = try poller.add(workersSocket)
        let clients = try poller.add(clientsSocket)
        let wake = poller.add(fileDescriptor: wakeRead)
        let zapItem = try zap.map { zap throws(ZMQError) in try poller.add(zap.socket) }
        logger.info("coordinator listening", metadata: ["workers": "\(workersEndpoint)", "clients": "\(clientsEndpoint)"])
        // Woken while the commands it started (hosted workers) or its workers keep the cores busy, the loop
        // runs sooner instead of waiting for a command's time slice to end.
        if case .refused(let errno) = LoopThread.preferShortSlices() {
            logger.debug("short time slices refused", metadata: ["errno": "\(errno)"])
        }
        state.startRecoveryGrace(now: clock.now())
        var wakeAt = clock.now()
        var spinning = SpinningWait(limit: configuration.spin)
        defer {
            if spinning.limit > .zero {
                logger.debug("spinning before waits", metadata: ["hits": "\(spinning.hits)", "misses": "\(spinning.misses)"])
            }
        }
        for guest in guests { guest.attach(to: &poller) }
        defer {
            // Guests still served when the loop ends (a stop not made by them: see LocalWorkers) end now.
            for guest in guests { guest.hostEnded() }
            guests.removeAll()
        }
        while true {
            var timeout = max(0, Int(((wakeAt - clock.now()) * 1000).rounded(.up)))
            for guest in guests { timeout = min(timeout, guest.prepareWait(&poller)) }
            // A hosted worker's messages sent after the last read (its `started`) are read now.
            if let directLinks, directLinks.pendingForCoordinator > 0 { timeout = 0 }
            try poller.poll(timeout: timeout, spinning: &spinning, expecting: dispatchedInProcessWork)
            // A poll that did not wait (a hosted worker's `started` already on its link) leaves the handler's
            // finish still expected: the next wait spins for it.
            if timeout != 0 { dispatchedInProcessWork = false }
            let now = readClocks()
            if poller.isReadable(wake), wokenToStop(now: now) { break }
            if let zapItem, poller.isReadable(zapItem) { try answerZAP() }
            let (workersReady, clientsReady) = (poller.isReadable(workers), poller.isReadable(clients))
            let hosting = !guests.isEmpty
            if hosting {
                // Guests first: a command that ended is reaped and its report sent now, and read below.
                guests.removeAll { !$0.turn(&poller) }
                poller.clearResults()
            }
            // What the guests sent in their turn is read now: on a direct link, and on the socket when guests
            // use one (no direct links). Guests on links send nothing on the socket: its empty read (a
            // `getpid` and a `poll`) is left out.
            if workersReady || (hosting && directLinks == nil) { try drain(workersSocket, now: now, handle: handleWorkerMessage) }
            if let directLinks, directLinks.pendingForCoordinator > 0 { try drain(directLinks, now: now) }
            if clientsReady { try drain(clientsSocket, now: now, handle: handleAuthenticatedClientMessage) }
            state.tick(now: now)
            wakeAt = try finishTurn(now: now)
            // After the turn's sends: a guest reads this turn's dispatches and starts them now, not one wait
            // later; what it sent then (its `started`) is read and answered at once, without a poll that
            // could not wait (≈ 10 µs of this thread per command in `opq map --local`).
            if hosting {
                guests.removeAll { !$0.turn(&poller) }
                if let directLinks, directLinks.pendingForCoordinator > 0 {
                    // Stamped when read, as after a poll: a start is not dated to the turn's dispatch.
                    let now = readClocks()
                    try drain(directLinks, now: now)
                    wakeAt = try finishTurn(now: now)
                }
            }
            observeTurn(now: now)
            heapTrim.afterTurn(operationTotal: state.core.operationTotal)
            if let publish = telemetry?.nextPublish { wakeAt = min(wakeAt, publish) }
        }
        try shutdown()
    }

    /// The loop's time for what it handles next (the state's wall clock, for journal records, set with it).
    private func readClocks() -> Double {
        state.wallTime = Date().timeIntervalSince1970
        return clock.now()
    }

    /// `ZMQ_BACKLOG` of both listening sockets (the kernel caps it at `net.core.somaxconn`).
    static let listenBacklog: Int32 = 4_096

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

    /// Handles up to `messagesPerTurn` messages the hosted workers sent over their direct links (no
    /// peer key: they are in this process).
    private func drain(_ links: DirectLinks, now: Double) throws {
        for _ in 0..<configuration.messagesPerTurn {
            guard let next = links.receiveMessage() else { return }
            telemetry?.totals.messagesReceived &+= 1
            switch next.message {
            case .frames(let frames):
                try handleWorkerMessage([next.identity] + frames, peerKey: nil, now: now)
            case let .message(message, raw):
                state.handleWorker(message, raw: raw, from: next.identity, now: now)
                try perform(state.takeActions(), now: now)
            }
        }
    }

    /// One message from a worker connection: the state machine handles it; its actions are carried out.
    private func handleWorkerMessage(_ frames: [[UInt8]], peerKey: String?, now: Double) throws {
        state.handleWorker(frames, peerKey: peerKey, now: now)
        try perform(state.takeActions(), now: now)
    }

    /// Random bytes for a session secret.
    static func randomSecret() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<CoordinatorState.sessionSecretBytes).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    private func shutdown() throws {
        logger.info("coordinator shutting down", metadata: ["workers": "\(state.sessions.count)"])
        // What hosted workers sent after the loop's last read (a handler's finish and the worker's Goodbye,
        // sent in the turn that ended it, just before the stop) is read now: a link needs no poll, so none
        // of it is lost, and it is journaled below.
        if let directLinks {
            let now = clock.now()
            while directLinks.pendingForCoordinator > 0 { try drain(directLinks, now: now) }
        }
        if try !absorbAndCommit() {
            logger.warning("journal disk still full: records not journaled are dropped (none was acknowledged; workers keep their finishes)")
        }
        for session in state.sessions.values {
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
