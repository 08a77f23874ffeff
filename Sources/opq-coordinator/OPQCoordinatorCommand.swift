import ArgumentParser
import Dispatch
import Foundation
import Logging
import OPQCoordinator
import OPQCore
import OPQDashboard
import OPQJournal
import OPQLogging
import OPQRuntime
import OPQVersion
import ZeroMQ

#if canImport(Glibc)
import Glibc
private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#endif

/// `opq-coordinator`: holds the dependency graph and the queues, and dispatches to workers.
@main
struct OPQCoordinatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opq-coordinator",
        abstract: "Hold opq's dependency graph and priority queues; dispatch ready operations to workers.",
        discussion: """
            Workers (opq-worker) connect to the workers endpoint; the opq command line and OPQClient programs \
            connect to the clients endpoint. Both bind loopback by default: opq runs commands, so an open \
            port is remote code execution. An endpoint is one address: anything that resolves to a \
            non-loopback address (0.0.0.0 and [::] included) is refused without CURVE keys (below); \
            interface names, '*' and libzmq's source-address syntax (a ';') are always refused.

            SECURITY: without CURVE keys there is no authentication. Any local user who can reach the workers endpoint can \
            pose as a worker, and any local user who can reach the clients endpoint can submit commands that \
            the workers run as THEIR user (root, if a worker runs as root). Loopback TCP is reachable by every \
            user of this machine. On a machine you share, use --ipc DIR (Unix sockets in a 0700 directory: \
            only your user can connect), and never run workers as root.

            Examples:
              opq-coordinator
              opq-coordinator --ipc "$XDG_RUNTIME_DIR/opq"        # private: workers use ipc://DIR/workers, opq ipc://DIR/clients
              opq-coordinator --workers-endpoint tcp://127.0.0.1:7130 --clients-endpoint tcp://[::1]:7131
              opq-coordinator --workers-endpoint 'tcp://127.0.0.1:*'     # any free port; printed at start

            On start it prints one line, "opq-coordinator workers=ENDPOINT clients=ENDPOINT", with the \
            endpoints as bound. SIGINT or SIGTERM shuts it down (workers are told); a second signal is harmless.

            State: every accepted change is journaled (SQLite, WAL) in the state directory before it is \
            acknowledged, and a restarted coordinator carries on from the journal: nothing acknowledged is lost \
            and no finished operation runs again. One coordinator per state directory (a second one refuses to \
            start, also if the lock file was removed: the journal file itself stays locked); an empty, damaged, \
            unreadable or self-contradicting journal is an error (exit status 2) that leaves the file untouched, \
            never a silent fresh start. When the state disk is full, changes (submit, cancel, …) are refused with \
            "the coordinator's state disk is full" while reads and running work go on; it resumes by itself \
            once there is room.
              opq-coordinator --state /var/lib/opq            # default: $XDG_STATE_HOME/opq, else ~/.local/state/opq
              opq-coordinator --fsync always                  # also survive power loss (slower commits)
              opq-coordinator --no-journal --local-workers 2  # nothing on disk: all is lost when it ends

            Without a journal (--no-journal) the coordinator keeps everything in memory: nothing survives its \
            end, and commands' output is spooled in a temporary directory removed when it stops. For private \
            clusters that live as long as one command (opq run, opq map --local), where a journal nobody \
            replays only costs time.

            Across machines (CURVE: encrypted, and every worker and client authenticated by its key):
              opq keys generate --role coordinator --out keys
              opq-coordinator --curve-key keys/coordinator.secret --authorized-workers workers.d \\
                --authorized-clients clients.d --workers-endpoint tcp://0.0.0.0:7130 --clients-endpoint tcp://0.0.0.0:7131
            With --curve-key any address may be bound; only keys whose .public file is in --authorized-workers \
            may connect as workers, only those in --authorized-clients as clients. SIGHUP rereads both \
            directories: a worker whose key was removed is disconnected and its operations requeued. The \
            secret key may come from $OPQ_CURVE_SECRET_KEY (the key itself) instead of a file.

            One-process cluster (what 'opq run' and 'opq map --local' start): --local-workers N also runs N workers \
            named local-1 … local-N inside this process, each with --local-slots slots, the built-in handlers, \
            this --kill-grace and its own lease watchdog; they talk to the coordinator through direct links in \
            memory (no socket on the dispatch path: a command's end, the next dispatch and its spawn happen in \
            one turn of the coordinator's loop). Other workers may still \
            connect to the workers endpoint. Logs of the local workers go to the same standard error. SIGINT or \
            SIGTERM stops the local workers first (no new work; running commands get --kill-grace seconds to \
            finish, then are stopped and handed back; they report and say goodbye), then the coordinator; a \
            second signal hands back at once. Not with --curve-key (workers inside the process have no key).
              opq-coordinator --ipc "$XDG_RUNTIME_DIR/opq" --local-workers 2 --local-slots 4

            Metrics and dashboard: --http 127.0.0.1:7132 serves Prometheus metrics at /metrics, a live \
            dashboard at / and JSON at /api/... (docs/dashboard.md). Loopback only, unless CURVE protects the \
            endpoints (--curve-key) AND a token is set (--http-token FILE, mode 0600, or $OPQ_HTTP_TOKEN); with a \
            token every request needs "Authorization: Bearer TOKEN" (a browser: the token as password). Otherwise \
            reach it through an SSH tunnel. With --http the start line ends with " http=http://HOST:PORT" (port 0 = \
            any free port).
            """,
        version: OPQVersion.line)

    @Option(help: ArgumentHelp(
        "Endpoint workers connect to: tcp://HOST:PORT on a loopback address (127.0.0.1, [::1], localhost; PORT * = any free port) or ipc://PATH. Default: tcp://127.0.0.1:\(CoordinatorConfiguration.defaultWorkersPort).",
        valueName: "endpoint"))
    var workersEndpoint: String?

    @Option(help: ArgumentHelp(
        "Endpoint clients (opq, OPQClient) connect to, as for --workers-endpoint. Default: tcp://127.0.0.1:\(CoordinatorConfiguration.defaultClientsPort).",
        valueName: "endpoint"))
    var clientsEndpoint: String?

    @Option(help: ArgumentHelp(
        "Bind both endpoints as Unix sockets in DIR (created mode 0700; an existing one must be yours and 0700): ipc://DIR/workers and ipc://DIR/clients. Only your user can connect, unlike loopback TCP.",
        valueName: "dir"))
    var ipc: String?

    @Option(help: "Heartbeat interval in seconds, both ways (greater than 0, at most \(Int(Limits.maxSeconds))).")
    var heartbeat = Defaults.heartbeat

    @Option(help: "Missed heartbeats before a worker is declared lost (1 to \(Limits.maxLiveness)).")
    var liveness = Defaults.liveness

    @Option(help: "Seconds between SIGTERM and SIGKILL when an operation is cancelled or times out (0 to \(Int(Limits.maxSeconds))).")
    var killGrace = Defaults.killGrace

    @Option(help: "State directory: the journal and its lock. Default: $XDG_STATE_HOME/opq, else ~/.local/state/opq.")
    var state: String?

    @Flag(help: "Keep no journal and no state directory: everything lives in memory and is lost when this process ends (a private cluster for one command). Not with --state.")
    var noJournal = false

    @Option(help: "Journal sync level: 'normal' survives a crash of the coordinator; 'always' fsyncs every commit and survives power loss.")
    var fsync: String = Defaults.fsync

    @Option(help: "Seconds operations running at a restart wait for their workers to report them before they get a new attempt (0 to \(Int(Limits.maxSeconds))).")
    var recoveryGrace = Defaults.recoveryGrace

    @Option(help: "Seconds a reservation (an operation a client program will add later, that others already depend on) lasts unless its program renews it; a program killed without closing its connection gives its reservations up after this (\(Int(Limits.reservationLeaseRange.lowerBound)) to \(Int(Limits.reservationLeaseRange.upperBound))).")
    var reservationLease = Defaults.reservationLease

    @Option(help: ArgumentHelp("Megabytes of each output stream of one operation kept in the output spool (STATE/output); beyond, it is cut (the last 64 KiB are kept).", valueName: "MB"))
    var outputSpoolCap = Defaults.outputSpoolCap

    @Option(help: ArgumentHelp("Megabytes the output spool keeps over all operations; the oldest finished operations' output goes first.", valueName: "MB"))
    var outputSpoolBudget = Defaults.outputSpoolBudget

    @Option(help: ArgumentHelp("Also run N workers (local-1 … local-N) inside this process, on direct links in memory (0 to \(Self.maxLocalWorkers)). Default: 0.", valueName: "n"))
    var localWorkers = Defaults.localWorkers

    @Option(help: ArgumentHelp("Slots of each local worker (1 to \(Limits.maxSlots)). Default: the machine's CPUs.", valueName: "n"))
    var localSlots: Int?

    /// The most `--local-workers`: each is a thread, a socket and a watchdog process.
    static let maxLocalWorkers = 256

    @Option(help: ArgumentHelp("Microseconds the event loop (which also serves the local workers) polls without sleeping after handing in-process work (handlers) to a thread of this process, before it waits: a sleeping thread wakes tens of microseconds after its message, a polling one at once. Backs off while nothing comes; never while commands run. 0 to \(SpinningWait.maximumMicroseconds); 0 = never. Default: \(SpinningWait.oneProcessDefaultMicroseconds) with --local-workers, else 0.", valueName: "µs"))
    var spin: Int?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = Defaults.logLevel

    @Option(help: "Log format on standard error: 'text', or 'json' (one object per line, metadata keys as fields).")
    var logFormat: String = Defaults.logFormat

    @Option(help: "Serve /metrics, the dashboard (/) and /api on HOST:PORT, e.g. 127.0.0.1:7132. Loopback only, unless CURVE is on and --http-token is set.")
    var http: String?

    @Option(help: ArgumentHelp("CURVE: this coordinator's secret key file (mode 0600; environment: OPQ_CURVE_SECRET_KEY). Encrypts both endpoints and allows non-loopback addresses.", valueName: "file"))
    var curveKey: String?

    @Option(help: ArgumentHelp("CURVE: directory of the worker public keys (*.public) admitted on the workers endpoint.", valueName: "dir"))
    var authorizedWorkers: String?

    @Option(help: ArgumentHelp("CURVE: directory of the client public keys (*.public) admitted on the clients endpoint.", valueName: "dir"))
    var authorizedClients: String?

    /// The CURVE settings from the options and environment; nil without a key.
    func curveSettings() throws -> CurveSettings? {
        guard let keys = try CurveKeys.ownKeys(file: curveKey, environment: ProcessInfo.processInfo.environment) else {
            guard authorizedWorkers == nil, authorizedClients == nil else {
                throw ValidationError("--authorized-workers and --authorized-clients need --curve-key (or OPQ_CURVE_SECRET_KEY)")
            }
            return nil
        }
        guard let authorizedWorkers, let authorizedClients else {
            throw ValidationError("with --curve-key, give --authorized-workers DIR and --authorized-clients DIR (an empty directory admits nobody)")
        }
        return CurveSettings(keys: keys, authorizedWorkers: authorizedWorkers, authorizedClients: authorizedClients)
    }

    @Option(help: ArgumentHelp("A file (mode 0600) whose first line is the token HTTP requests must carry (Authorization: Bearer TOKEN); or set $\(HTTPAccess.tokenEnvironment).", valueName: "file"))
    var httpToken: String?

    /// Whether CURVE protects the endpoints: a secret key is given (--curve-key or $OPQ_CURVE_SECRET_KEY).
    var curveIsOn: Bool { curveKey != nil || ProcessInfo.processInfo.environment[CurveKeys.secretKeyVariable] != nil }

    /// The HTTP token rule from --http-token, $OPQ_HTTP_TOKEN and CURVE.
    func httpAccess() throws(HTTPAddressError) -> HTTPAccess {
        HTTPAccess(token: try HTTPAccess.token(file: httpToken, environment: ProcessInfo.processInfo.environment), curveIsOn: curveIsOn)
    }

    func validate() throws {
        // Every number is checked here against the range every other edge uses (OPQCore.Limits), so a
        // value accepted here is never refused later by a worker or the wire.
        let problems = [
            Limits.durationProblem(heartbeat, name: "--heartbeat", positive: true),
            Limits.countProblem(liveness, name: "--liveness", range: 1...Limits.maxLiveness),
            Limits.durationProblem(killGrace, name: "--kill-grace"),
            Limits.durationProblem(recoveryGrace, name: "--recovery-grace"),
            Limits.reservationLeaseProblem(reservationLease, name: "--reservation-lease"),
        ]
        if let problem = problems.compactMap({ $0 }).first { throw ValidationError(problem) }
        if let problem = Limits.countProblem(localWorkers, name: "--local-workers", range: 0...Self.maxLocalWorkers)
            ?? localSlots.flatMap({ Limits.countProblem($0, name: "--local-slots", range: 1...Limits.maxSlots) }) {
            throw ValidationError(problem)
        }
        if localSlots != nil, localWorkers == 0 { throw ValidationError("--local-slots is for --local-workers N: give that too") }
        if let spin, let problem = SpinningWait.problem(microseconds: spin) { throw ValidationError("--spin: \(problem)") }
        if localWorkers > 0, curveIsOn {
            throw ValidationError("""
                --local-workers runs workers inside this process, which CURVE cannot authenticate (they have no key): \
                leave out --curve-key, or start opq-worker processes with keys of their own
                """)
        }
        for (flag, endpoint) in [("--workers-endpoint", workersEndpoint), ("--clients-endpoint", clientsEndpoint)] {
            // Other mistakes in an endpoint are the coordinator's to report (exit status 2, as always).
            guard let endpoint, (try? Endpoint(parsing: endpoint))?.isInProcess == true else { continue }
            do { _ = try Endpoint(parsingBetweenProcesses: endpoint) } catch { throw ValidationError("\(flag): \(error)") }
        }
        if ipc != nil, workersEndpoint != nil || clientsEndpoint != nil {
            throw ValidationError("--ipc sets both endpoints: give it without --workers-endpoint and --clients-endpoint")
        }
        if noJournal, state != nil {
            throw ValidationError("--no-journal keeps no state directory: leave out --state (or --no-journal)")
        }
        guard Journal.Sync(rawValue: fsync) != nil else { throw ValidationError("--fsync must be 'normal' or 'always', not '\(fsync)'") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        guard LogFormat(rawValue: logFormat) != nil else { throw ValidationError("--log-format must be 'text' or 'json', not '\(logFormat)'") }
        if let http {
            do { _ = try HTTPAddress(parsing: http, allowNonLoopback: try httpAccess().allowsNonLoopback) } catch { throw ValidationError(error.description) }
        } else if httpToken != nil {
            throw ValidationError("--http-token is for the HTTP server: give --http HOST:PORT too")
        }
    }

    /// Every connected client or worker holds a descriptor: the soft limit (often 1,024) goes up to the
    /// hard one, so thousands of peers can connect.
    static func raiseFileLimit() {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
    }

    func run() throws {
        // libzmq loads on another thread (``LibraryPreload``, started by `main` before the command line is
        // read) while this one opens the journal; the first ZeroMQ call waits for it. Waited for on every
        // way out, so the process never exits while the loader runs a library's constructors.
        defer { LibraryPreload.wait() }
        let level = Logger.Level(rawValue: logLevel)!
        LogFormat(rawValue: logFormat)!.bootstrap(level: level)
        Self.raiseFileLimit()
        var configuration = CoordinatorConfiguration()
        if let workersEndpoint { configuration.workersEndpoint = workersEndpoint }
        if let clientsEndpoint { configuration.clientsEndpoint = clientsEndpoint }
        configuration.heartbeatInterval = heartbeat
        configuration.liveness = liveness
        configuration.killGrace = killGrace
        configuration.stateDirectory = noJournal ? nil : state ?? StateDirectory.defaultPath()
        configuration.sync = Journal.Sync(rawValue: fsync)!
        configuration.recoveryGrace = recoveryGrace
        configuration.reservationLease = reservationLease
        configuration.outputSpoolCap = max(0, outputSpoolCap) << 20
        configuration.outputSpoolBudget = max(0, outputSpoolBudget) << 20
        if localWorkers > 0 { configuration.inProcessWorkersEndpoint = LocalWorkers.endpoint }
        configuration.spin = spin.map { .microseconds($0) } ?? (localWorkers > 0 ? SpinningWait.oneProcessDefault : .zero)
        let coordinator: Coordinator
        do {
            if let ipc { try configuration.usePrivateIPC(in: ipc) }
            configuration.curve = try curveSettings()
            coordinator = try Coordinator(configuration: configuration, logger: Logger(label: "opq.coordinator"))
        } catch {
            FileHandle.standardError.write(Data("opq-coordinator: \(error)\n".utf8))
            throw ExitCode(2)
        }
        let local: LocalWorkers?
        do {
            local = localWorkers == 0 ? nil : try LocalWorkers(
                count: localWorkers, slots: localSlots ?? ProcessInfo.processInfo.activeProcessorCount, killGrace: killGrace,
                heartbeat: heartbeat, coordinator: coordinator, logger: Logger(label: "opq.worker"))
        } catch {
            FileHandle.standardError.write(Data("opq-coordinator: \(error)\n".utf8))
            throw ExitCode(2)
        }
        // SIGHUP rereads the authorized keys; handled before the start line, so a signal sent on seeing
        // it never meets the default action (termination).
        let reload = SignalTrap.handle([SIGHUP]) { _ in coordinator.reload() }
        var dashboard: DashboardServer.Running?
        if let http {
            let publisher = SnapshotPublisher()
            coordinator.publishSnapshots(to: publisher)
            let access = try httpAccess()
            let server = DashboardServer(address: try HTTPAddress(parsing: http, allowNonLoopback: access.allowsNonLoopback),
                                         publisher: publisher, access: access, logger: Logger(label: "opq.http"))
            do {
                dashboard = try server.start()
            } catch {
                FileHandle.standardError.write(Data("opq-coordinator: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        // Local workers stop first (they report and say goodbye), then the coordinator. Both set up before
        // the start line: a SIGTERM sent on seeing it stops the cluster, never meets the default action.
        // (The workers connect over direct links the coordinator reads; its loop serves them once it runs.)
        do {
            try local?.start()
        } catch {
            FileHandle.standardError.write(Data("opq-coordinator: cannot start the local workers: \(error)\n".utf8))
            throw ExitCode(2)
        }
        let signals = SignalTrap.handle([SIGINT, SIGTERM]) { signal in
            if let local { local.stop(reason: SignalTrap.name(of: signal)) } else { coordinator.stop() }
        }
        let httpField = dashboard.map { " http=\($0.url)" } ?? ""
        FileHandle.standardOutput.write(Data("opq-coordinator workers=\(coordinator.workersEndpoint) clients=\(coordinator.clientsEndpoint)\(httpField)\n".utf8))
        // FileHandle writes with write(2): readers (a pipe, `opq`'s watch on the log file) have the line now; no
        // fsync (on a log file it waited for the disk before the loop could start).
        try coordinator.run()
        dashboard?.task.cancel()
        withExtendedLifetime((signals, reload)) {}
        if let failure = local?.failure {
            FileHandle.standardError.write(Data("opq-coordinator: \(failure)\n".utf8))
            throw ExitCode(2)
        }
    }
}

/// Loads libzmq (≈ 2.5–3 ms here with its 14 libraries) on a thread of its own from the first statement of
/// `main` on, so the load overlaps reading the command line and setting up the state; the coordinator's
/// first ZeroMQ call waits for it (measured with bpftrace: the context was made 2.1 ms after the spool
/// directory while the load begun in `run()` finished).
enum LibraryPreload {
    private static let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) private static var started = false

    /// Starts the load (once: `main` calls it first). From the main thread only.
    static func start() {
        guard !started else { return }
        started = true
        Thread.detachNewThread {
            Context.loadLibrary()
            done.signal()
        }
    }

    /// Waits until the load started by ``start()`` has ended (at once if it was not started).
    static func wait() {
        guard started else { return }
        done.wait()
        done.signal()
    }
}
