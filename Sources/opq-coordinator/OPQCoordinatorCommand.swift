import ArgumentParser
import Dispatch
import Foundation
import Logging
import OPQCoordinator
import OPQDashboard
import OPQJournal
import OPQLogging

/// `opq-coordinator`: holds the dependency graph and the queues, and dispatches to workers.
@main
struct OPQCoordinatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opq-coordinator",
        abstract: "Hold opq's dependency graph and priority queues; dispatch ready operations to workers.",
        discussion: """
            Workers (opq-worker) connect to the workers endpoint; the opq command line and OPQClient programs \
            connect to the clients endpoint. Both bind loopback by default: opq runs commands, so an open \
            port is remote code execution. Non-loopback addresses are refused.

            Examples:
              opq-coordinator
              opq-coordinator --workers-endpoint tcp://127.0.0.1:7130 --clients-endpoint tcp://127.0.0.1:7131
              opq-coordinator --workers-endpoint ipc:///tmp/opq/workers --clients-endpoint ipc:///tmp/opq/clients
              opq-coordinator --workers-endpoint 'tcp://127.0.0.1:*'     # any free port; printed at start

            On start it prints one line, "opq-coordinator workers=ENDPOINT clients=ENDPOINT", with the \
            endpoints as bound. SIGINT or SIGTERM shuts it down (workers are told); a second signal is harmless.

            State: every accepted change is journaled (SQLite, WAL) in the state directory before it is \
            acknowledged, and a restarted coordinator carries on from the journal: nothing acknowledged is lost \
            and no finished operation runs again. One coordinator per state directory (a second one refuses to \
            start); a damaged or unreadable journal is an error (exit status 2), never a silent fresh start.
              opq-coordinator --state /var/lib/opq            # default: $XDG_STATE_HOME/opq, else ~/.local/state/opq
              opq-coordinator --fsync always                  # also survive power loss (slower commits)

            Metrics and dashboard: --http 127.0.0.1:7132 serves Prometheus metrics at /metrics, a live \
            dashboard at / and JSON at /api/... (docs/dashboard.md). Loopback only: there is no authentication \
            yet (no CURVE, no token), so a non-loopback address is refused; reach it through an SSH tunnel. \
            With --http the start line ends with " http=http://HOST:PORT" (port 0 = any free port).
            """)

    @Option(help: "Endpoint workers connect to (tcp://127.0.0.1:PORT or ipc://PATH).")
    var workersEndpoint = "tcp://127.0.0.1:\(CoordinatorConfiguration.defaultWorkersPort)"

    @Option(help: "Endpoint clients (opq, OPQClient) connect to.")
    var clientsEndpoint = "tcp://127.0.0.1:\(CoordinatorConfiguration.defaultClientsPort)"

    @Option(help: "Heartbeat interval in seconds, both ways.")
    var heartbeat = 1.0

    @Option(help: "Missed heartbeats before a worker is declared lost.")
    var liveness = 3

    @Option(help: "Seconds between SIGTERM and SIGKILL when an operation is cancelled or times out.")
    var killGrace = 10.0

    @Option(help: "State directory: the journal and its lock. Default: $XDG_STATE_HOME/opq, else ~/.local/state/opq.")
    var state: String?

    @Option(help: "Journal sync level: 'normal' survives a crash of the coordinator; 'always' fsyncs every commit and survives power loss.")
    var fsync: String = Journal.Sync.processCrash.rawValue

    @Option(help: "Seconds operations running at a restart wait for their workers to report them before they get a new attempt.")
    var recoveryGrace = 5.0

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(help: "Log format on standard error: 'text', or 'json' (one object per line, metadata keys as fields).")
    var logFormat: String = LogFormat.text.rawValue

    @Option(help: "Serve /metrics, the dashboard (/) and /api on HOST:PORT, e.g. 127.0.0.1:7132. Loopback only: there is no authentication yet.")
    var http: String?

    func validate() throws {
        guard heartbeat > 0 else { throw ValidationError("--heartbeat must be positive") }
        guard liveness >= 1 else { throw ValidationError("--liveness must be at least 1") }
        guard killGrace >= 0 else { throw ValidationError("--kill-grace must not be negative") }
        guard Journal.Sync(rawValue: fsync) != nil else { throw ValidationError("--fsync must be 'normal' or 'always', not '\(fsync)'") }
        guard recoveryGrace >= 0 else { throw ValidationError("--recovery-grace must not be negative") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        guard LogFormat(rawValue: logFormat) != nil else { throw ValidationError("--log-format must be 'text' or 'json', not '\(logFormat)'") }
        if let http {
            do { _ = try HTTPAddress(parsing: http) } catch { throw ValidationError(error.description) }
        }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel)!
        LogFormat(rawValue: logFormat)!.bootstrap(level: level)
        var configuration = CoordinatorConfiguration()
        configuration.workersEndpoint = workersEndpoint
        configuration.clientsEndpoint = clientsEndpoint
        configuration.heartbeatInterval = heartbeat
        configuration.liveness = liveness
        configuration.killGrace = killGrace
        configuration.stateDirectory = state ?? StateDirectory.defaultPath()
        configuration.sync = Journal.Sync(rawValue: fsync)!
        configuration.recoveryGrace = recoveryGrace
        let coordinator: Coordinator
        do {
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
