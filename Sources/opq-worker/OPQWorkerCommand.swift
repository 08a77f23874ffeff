import ArgumentParser
import Dispatch
import Foundation
import Logging
import OPQCore
import OPQLogging
import OPQRuntime
import OPQWorker
import OPQVersion
import ZeroMQ

/// `opq-worker`: runs operations for a coordinator: the public `Worker` API with the built-in handlers.
@main
struct OPQWorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opq-worker",
        abstract: "Run opq operations (commands and handlers) for an opq-coordinator.",
        discussion: """
            The worker connects to the coordinator's worker endpoint, offers SLOTS concurrent slots and \
            runs what it is dispatched: commands as child processes (each in its own process group), and \
            the built-in handlers noop, sleep and sha256. It reconnects by itself when the coordinator \
            goes away (1 s, 2 s, ... 32 s apart) and reports what it still runs when it comes back.

            Examples:
              opq-worker --slots 4
              opq-worker --coordinator tcp://127.0.0.1:7130 --slots 8 --queues build,test
              opq-worker --slots 1 --label gpu=1 --label host=a --name gpu-a
              opq-worker --cpus 8 --memory 32G --slots 16
              OPQ_WORKER_ENDPOINT=ipc:///tmp/opq/w opq-worker --slots 2 --log-level debug
              opq-worker --coordinator tcp://head:7130 --server-key coordinator.public --curve-key worker.secret --slots 8

            CURVE: --server-key (or $OPQ_SERVER_KEY, the key itself) is the coordinator's public key; \
            --curve-key (or $OPQ_CURVE_SECRET_KEY) this worker's secret key, whose .public file must be in the \
            coordinator's --authorized-workers directory. A key the coordinator does not accept is reported \
            ("the coordinator did not accept this key") and retried with backoff.

            SIGINT or SIGTERM stops gracefully: no new work is taken, running operations finish and are \
            reported, then the worker says goodbye. A second signal stops at once: running commands are \
            killed and their operations handed back to the coordinator to run elsewhere.
            """,
        version: OPQVersion.line)

    @Option(help: ArgumentHelp("The coordinator's worker endpoint (environment: OPQ_WORKER_ENDPOINT).", valueName: "endpoint"))
    var coordinator = ProcessInfo.processInfo.environment["OPQ_WORKER_ENDPOINT"] ?? WorkerConfiguration.defaultCoordinator

    @Option(help: ArgumentHelp("How many operations run at once (1 to \(Limits.maxSlots)). Default: --cpus, or the machine's CPUs.", valueName: "n"))
    var slots: Int?

    @Option(help: ArgumentHelp("CPUs offered to operations' cpus: (1 to \(Limits.maxCpus)). Default: --slots, or the machine's CPUs.", valueName: "n"))
    var cpus: Int?

    @Option(help: ArgumentHelp("Memory offered to operations' memory:, e.g. 16G (K, M, G, T = powers of 1024; default: the machine's memory).", valueName: "size"))
    var memory: String?

    /// `--slots`, else `--cpus`, else the machine's CPUs: `--slots` stays a shorthand for CPUs.
    var slotCount: Int { slots ?? cpus ?? ProcessInfo.processInfo.activeProcessorCount }

    @Option(help: ArgumentHelp("Serve only these queues, comma-separated (default: every queue).", valueName: "a,b"))
    var queues: String?

    @Option(name: .customLong("label"), help: ArgumentHelp("A placement label offered to operations; repeatable.", valueName: "key=value"))
    var labels: [String] = []

    @Option(help: ArgumentHelp("The worker's unique name (default: host-pid).", valueName: "name"))
    var name: String?

    @Option(help: ArgumentHelp("Seconds between SIGTERM and SIGKILL when a command is cancelled (0 to \(Int(Limits.maxSeconds))).", valueName: "seconds"))
    var killGrace = 10.0

    @Option(help: ArgumentHelp("Heartbeat interval in seconds until the coordinator sets its own (greater than 0, at most \(Int(Limits.maxSeconds))).", valueName: "seconds"))
    var heartbeat = 1.0

    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel = "info"

    @Option(help: "Log format on standard error: 'text', or 'json' (one object per line, metadata keys as fields).")
    var logFormat: String = LogFormat.text.rawValue

    @Option(help: ArgumentHelp("CURVE: the coordinator's public key file (environment: OPQ_SERVER_KEY, the key itself).", valueName: "file"))
    var serverKey: String?

    @Option(help: ArgumentHelp("CURVE: this worker's secret key file, mode 0600 (environment: OPQ_CURVE_SECRET_KEY).", valueName: "file"))
    var curveKey: String?

    @Option(help: ArgumentHelp("Microseconds the worker polls without sleeping before it waits, while none of its commands runs: for handlers and a coordinator with cores to spare, a polling thread sees the next message at once, a sleeping one tens of microseconds later. Backs off while nothing comes. 0 to \(SpinningWait.maximumMicroseconds); default 0 = never.", valueName: "µs"))
    var spin = 0

    /// The agent's configuration built from the options.
    var workerConfiguration: WorkerConfiguration {
        get throws {
            var labelMap: [String: String] = [:]
            for label in labels {
                guard let equals = label.firstIndex(of: "="), equals != label.startIndex else {
                    throw ValidationError("--label '\(label)' is not key=value (e.g. --label gpu=1)")
                }
                labelMap[String(label[..<equals])] = String(label[label.index(after: equals)...])
            }
            var configuration = WorkerConfiguration(
                coordinator: coordinator, name: name ?? WorkerConfiguration.defaultName(), slots: slotCount,
                queues: queues.map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) },
                labels: labelMap, killGracePeriod: killGrace, heartbeatInterval: heartbeat)
                .with(cpus: cpus ?? slotCount,
                      memory: memory.flatMap(ByteSize.bytes(parsing:)) ?? Int(clamping: ProcessInfo.processInfo.physicalMemory))
            configuration.spin = .microseconds(spin)
            return configuration
        }
    }

    func validate() throws {
        // The flags' own ranges (OPQCore.Limits, the same the coordinator and the wire use), named by flag,
        // before the configuration's own checks.
        let problems = [
            cpus.flatMap { Limits.countProblem($0, name: "--cpus", range: 1...Limits.maxCpus) },
            Limits.countProblem(slotCount, name: "--slots", range: 1...Limits.maxSlots),
            memory.flatMap { Limits.memoryProblem($0, name: "--memory") },
            Limits.durationProblem(killGrace, name: "--kill-grace"),
            Limits.durationProblem(heartbeat, name: "--heartbeat", positive: true),
            SpinningWait.problem(microseconds: spin).map { "--spin: \($0)" },
        ]
        if let problem = problems.compactMap({ $0 }).first { throw ValidationError(problem) }
        do {
            _ = try Endpoint(parsingBetweenProcesses: coordinator)  // one address, as the coordinator binds it
        } catch {
            throw ValidationError("--coordinator: \(error)")
        }
        if let problem = try workerConfiguration.problem { throw ValidationError(problem) }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        guard LogFormat(rawValue: logFormat) != nil else { throw ValidationError("--log-format must be 'text' or 'json', not '\(logFormat)'") }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel)!
        LogFormat(rawValue: logFormat)!.bootstrap(level: level)
        var configuration = try workerConfiguration
        do {
            let environment = ProcessInfo.processInfo.environment
            configuration.curveServerKey = try CurveKeys.serverKey(file: serverKey, environment: environment)
            configuration.curveKeys = try CurveKeys.ownKeys(file: curveKey, environment: environment)
        } catch {
            FileHandle.standardError.write(Data("opq-worker: \(error)\n".utf8))
            throw ExitCode(2)
        }
        let worker = try Worker(configuration: configuration, logger: Logger(label: "opq.worker"))
        // A second stop hands back at once.
        let signals = SignalTrap.handle([SIGINT, SIGTERM]) { worker.stop(reason: SignalTrap.name(of: $0)) }
        defer { signals.cancel() }
        do {
            try worker.run()
        } catch {
            FileHandle.standardError.write(Data("opq-worker: cannot serve \(coordinator): \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}
