import ArgumentParser
import Dispatch
import Foundation
import Logging
import OPQCoordinator
import OPQJournal
import ZeroMQ

/// `opq-coordinator`: holds the dependency graph and the queues, and dispatches to workers.
@main
struct OPQCoordinatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opq-coordinator",
        abstract: "Hold opq's dependency graph and priority queues; dispatch ready operations to workers.",
        discussion: """
            Workers (opq-worker) connect to the workers endpoint; the opq command line and OPQClient programs \
            connect to the clients endpoint. Both bind loopback by default: opq runs commands, so an open \
            port is remote code execution. Non-loopback addresses are refused without CURVE keys (below).

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

            Across machines (CURVE: encrypted, and every worker and client authenticated by its key):
              opq keys generate --role coordinator --out keys
              opq-coordinator --curve-key keys/coordinator.secret --authorized-workers workers.d \\
                --authorized-clients clients.d --workers-endpoint tcp://0.0.0.0:7130 --clients-endpoint tcp://0.0.0.0:7131
            With --curve-key any address may be bound; only keys whose .public file is in --authorized-workers \
            may connect as workers, only those in --authorized-clients as clients. SIGHUP rereads both \
            directories: a worker whose key was removed is disconnected and its operations requeued. The \
            secret key may come from $OPQ_CURVE_SECRET_KEY (the key itself) instead of a file.
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

    func validate() throws {
        guard heartbeat > 0 else { throw ValidationError("--heartbeat must be positive") }
        guard liveness >= 1 else { throw ValidationError("--liveness must be at least 1") }
        guard killGrace >= 0 else { throw ValidationError("--kill-grace must not be negative") }
        guard Journal.Sync(rawValue: fsync) != nil else { throw ValidationError("--fsync must be 'normal' or 'always', not '\(fsync)'") }
        guard recoveryGrace >= 0 else { throw ValidationError("--recovery-grace must not be negative") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel)!
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
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
            configuration.curve = try curveSettings()
            coordinator = try Coordinator(configuration: configuration, logger: Logger(label: "opq.coordinator"))
        } catch {
            FileHandle.standardError.write(Data("opq-coordinator: \(error)\n".utf8))
            throw ExitCode(2)
        }
        // SIGHUP rereads the authorized keys; handled before the start line, so a signal sent on seeing
        // it never meets the default action (termination).
        signal(SIGHUP, SIG_IGN)
        let reload = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        reload.setEventHandler { coordinator.reload() }
        reload.resume()
        FileHandle.standardOutput.write(Data("opq-coordinator workers=\(coordinator.workersEndpoint) clients=\(coordinator.clientsEndpoint)\n".utf8))
        FileHandle.standardOutput.synchronizeFile()
        let signals = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { coordinator.stop() }
            source.resume()
            return source
        }
        try coordinator.run()
        withExtendedLifetime((signals, reload)) {}
    }
}
