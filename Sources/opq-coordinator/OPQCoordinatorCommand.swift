import ArgumentParser
import Dispatch
import Foundation
import Logging
import OPQCoordinator
import OPQCore
import OPQDashboard
import OPQJournal
import OPQLogging
import OPQVersion

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
            non-loopback address, wildcards (*, 0.0.0.0, [::]), interface names and libzmq's source-address \
            syntax (a ';') are refused.

            SECURITY: there is no authentication yet. Any local user who can reach the workers endpoint can \
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

            Metrics and dashboard: --http 127.0.0.1:7132 serves Prometheus metrics at /metrics, a live \
            dashboard at / and JSON at /api/... (docs/dashboard.md). Loopback only: there is no authentication \
            yet (no CURVE, no token), so a non-loopback address is refused; reach it through an SSH tunnel. \
            With --http the start line ends with " http=http://HOST:PORT" (port 0 = any free port).
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
    var heartbeat = 1.0

    @Option(help: "Missed heartbeats before a worker is declared lost (1 to \(Limits.maxLiveness)).")
    var liveness = 3

    @Option(help: "Seconds between SIGTERM and SIGKILL when an operation is cancelled or times out (0 to \(Int(Limits.maxSeconds))).")
    var killGrace = 10.0

    @Option(help: "State directory: the journal and its lock. Default: $XDG_STATE_HOME/opq, else ~/.local/state/opq.")
    var state: String?

    @Option(help: "Journal sync level: 'normal' survives a crash of the coordinator; 'always' fsyncs every commit and survives power loss.")
    var fsync: String = Journal.Sync.processCrash.rawValue

    @Option(help: "Seconds operations running at a restart wait for their workers to report them before they get a new attempt (0 to \(Int(Limits.maxSeconds))).")
    var recoveryGrace = 5.0

    @Option(help: ArgumentHelp("Megabytes of each output stream of one operation kept in the output spool (STATE/output); beyond, it is cut (the last 64 KiB are kept).", valueName: "MB"))
    var outputSpoolCap = 1_024

    @Option(help: ArgumentHelp("Megabytes the output spool keeps over all operations; the oldest finished operations' output goes first.", valueName: "MB"))
    var outputSpoolBudget = 8_192

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(help: "Log format on standard error: 'text', or 'json' (one object per line, metadata keys as fields).")
    var logFormat: String = LogFormat.text.rawValue

    @Option(help: "Serve /metrics, the dashboard (/) and /api on HOST:PORT, e.g. 127.0.0.1:7132. Loopback only: there is no authentication yet.")
    var http: String?

    func validate() throws {
        // Every number is checked here against the range every other edge uses (OPQCore.Limits), so a
        // value accepted here is never refused later by a worker or the wire.
        let problems = [
            Limits.durationProblem(heartbeat, name: "--heartbeat", positive: true),
            Limits.countProblem(liveness, name: "--liveness", range: 1...Limits.maxLiveness),
            Limits.durationProblem(killGrace, name: "--kill-grace"),
            Limits.durationProblem(recoveryGrace, name: "--recovery-grace"),
        ]
        if let problem = problems.compactMap({ $0 }).first { throw ValidationError(problem) }
        if ipc != nil, workersEndpoint != nil || clientsEndpoint != nil {
            throw ValidationError("--ipc sets both endpoints: give it without --workers-endpoint and --clients-endpoint")
        }
        guard Journal.Sync(rawValue: fsync) != nil else { throw ValidationError("--fsync must be 'normal' or 'always', not '\(fsync)'") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        guard LogFormat(rawValue: logFormat) != nil else { throw ValidationError("--log-format must be 'text' or 'json', not '\(logFormat)'") }
        if let http {
            do { _ = try HTTPAddress(parsing: http) } catch { throw ValidationError(error.description) }
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
        let level = Logger.Level(rawValue: logLevel)!
        LogFormat(rawValue: logFormat)!.bootstrap(level: level)
        Self.raiseFileLimit()
        var configuration = CoordinatorConfiguration()
        if let workersEndpoint { configuration.workersEndpoint = workersEndpoint }
        if let clientsEndpoint { configuration.clientsEndpoint = clientsEndpoint }
        configuration.heartbeatInterval = heartbeat
        configuration.liveness = liveness
        configuration.killGrace = killGrace
        configuration.stateDirectory = state ?? StateDirectory.defaultPath()
        configuration.sync = Journal.Sync(rawValue: fsync)!
        configuration.recoveryGrace = recoveryGrace
        configuration.outputSpoolCap = max(0, outputSpoolCap) << 20
        configuration.outputSpoolBudget = max(0, outputSpoolBudget) << 20
        let coordinator: Coordinator
        do {
            if let ipc { try configuration.usePrivateIPC(in: ipc) }
            coordinator = try Coordinator(configuration: configuration, logger: Logger(label: "opq.coordinator"))
        } catch {
            FileHandle.standardError.write(Data("opq-coordinator: \(error)\n".utf8))
            throw ExitCode(2)
        }
        var dashboard: DashboardServer.Running?
        if let http {
            let publisher = SnapshotPublisher()
            coordinator.publishSnapshots(to: publisher)
            let server = DashboardServer(address: try HTTPAddress(parsing: http), publisher: publisher, logger: Logger(label: "opq.http"))
            do {
                dashboard = try server.start()
            } catch {
                FileHandle.standardError.write(Data("opq-coordinator: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        let httpField = dashboard.map { " http=\($0.url)" } ?? ""
        FileHandle.standardOutput.write(Data("opq-coordinator workers=\(coordinator.workersEndpoint) clients=\(coordinator.clientsEndpoint)\(httpField)\n".utf8))
        FileHandle.standardOutput.synchronizeFile()
        let signals = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { coordinator.stop() }
            source.resume()
            return source
        }
        try coordinator.run()
        dashboard?.task.cancel()
        withExtendedLifetime(signals) {}
    }
}
