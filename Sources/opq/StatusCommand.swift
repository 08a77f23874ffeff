import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import ZeroMQ

/// `opq status [JOB]`: jobs and queues, or one job's operations.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show jobs and queues, or the operations of one job.",
        discussion: """
            Examples:
              opq status                     # every job's progress, every queue's settings and counts
              opq status job-3               # one line per operation of job-3
              opq status job-3 --json        # {"version": 1, "job": 3, "finished": true, "operations": [{"id": …, "state": …}, …]}
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Argument(help: "job-N or N; omit for an overview.")
    var job: String?

    @Flag(help: "Print JSON with stable field names (operations: id, name, job, queue, state, outcome, priority, attempts, worker, exitCode).")
    var json = false

    func run() throws {
        try Self.show(endpoint: global.endpoint, job: job, json: json)
    }

    /// Prints job `job`'s operations, or every job and queue when nil, from the coordinator at `endpoint`
    /// (secured with ``Connection/security``). The overview is one round trip (issue 19): no probe first —
    /// its first reply is awaited ``Connection/probeSeconds`` at most, so an absent coordinator is reported
    /// as soon. A job is asked after a probe (its reply may take long to build: a big job's every operation).
    static func show(endpoint: String, job: String?, json: Bool) throws(ExitStatus) {
        let connection = try Connection.forCommandThatExits(endpoint, probed: job != nil)
        var id: JobID?
        if let job {
            guard case .job(let parsed)? = TargetID(job, bare: { .job(JobID($0)) }) else {
                throw fail(.usage, "'\(job)' is not a job id (write job-N)")
            }
            id = parsed
        }
        do throws(ClientError) {
            if let id {
                try showJob(connection, id, json: json)
            } else {
                try showOverview(connection, json: json)
            }
        } catch {
            throw Connection.status(for: error)
        }
    }

    private static func showJob(_ connection: CoordinatorClient, _ job: JobID, json: Bool) throws(ClientError) {
        let info = try connection.job(job)
        if json {
            print(JSONOutput.string(["version": JSONOutput.version, "job": info.id.rawValue, "finished": info.isFinished, "counts": Self.counts(info.counts),
                                     "operations": info.operations.map(JSONOutput.operation)]))
            return
        }
        print("job-\(info.id.rawValue): \(info.isFinished ? "finished" : "running") — " + Self.describe(info.counts))
        for op in info.operations {
            let state = op.state == .finished ? JobProgress.word(op.outcome) : (op.state?.description ?? "?")
            var line = "  op-\(op.id.rawValue)".padding(toLength: 10, withPad: " ", startingAt: 0) + " "
            line += (op.name.isEmpty ? "-" : op.name).padding(toLength: 20, withPad: " ", startingAt: 0) + " "
            line += state.padding(toLength: 10, withPad: " ", startingAt: 0) + " queue \(op.queue)"
            if let exitCode = op.exitCode { line += ", exit \(exitCode)" }
            if let duration = op.duration { line += String(format: ", %.2f s", duration) }
            if let worker = op.worker { line += ", on \(worker)" }
            print(line)
        }
    }

    private static func showOverview(_ connection: CoordinatorClient, json: Bool) throws(ClientError) {
        let (jobs, queues) = try connection.jobsAndQueues(firstReplyTimeout: Connection.probeSeconds)
        if json {
            print(JSONOutput.string([
                "version": JSONOutput.version,
                "jobs": jobs.map { ["id": $0.id.rawValue, "finished": $0.isFinished, "counts": Self.counts($0.counts)] as [String: Any] },
                "queues": queues.map {
                    ["name": $0.name, "maxConcurrent": $0.maxConcurrentOperationCount, "suspended": $0.isSuspended, "counts": Self.counts($0.counts)] as [String: Any]
                },
            ]))
            return
        }
        print(jobs.isEmpty ? "no jobs" : "jobs:")
        for job in jobs { print("  job-\(job.id.rawValue): \(job.isFinished ? "finished" : "running") — " + Self.describe(job.counts)) }
        print(queues.isEmpty ? "no queues" : "queues:")
        for queue in queues {
            let limit = queue.maxConcurrentOperationCount < 0 ? "no limit" : "maxConcurrent \(queue.maxConcurrentOperationCount)"
            print("  \(queue.name): \(limit)\(queue.isSuspended ? ", suspended" : "") — " + Self.describe(queue.counts))
            for line in queue.tooLarge { print("    waiting: \(line)") }
        }
    }

    static func counts(_ counts: OperationCounts) -> [String: Int] {
        ["pending": counts.pending, "ready": counts.ready, "dispatched": counts.dispatched, "executing": counts.executing,
         "succeeded": counts.succeeded, "failed": counts.failed, "cancelled": counts.cancelled]
    }

    static func describe(_ counts: OperationCounts) -> String {
        let finished = counts.succeeded + counts.failed + counts.cancelled
        let total = finished + counts.pending + counts.ready + counts.dispatched + counts.executing
        return "\(finished)/\(total) finished (\(counts.succeeded) succeeded, \(counts.failed) failed, \(counts.cancelled) cancelled), "
            + "\(counts.dispatched + counts.executing) running, \(counts.pending + counts.ready) waiting"
    }
}

extension StatusCommand {
    /// `opq status [JOB] [--json]` with the global options, read by hand (``parsedByHand(_:)``).
    struct HandParsed {
        var coordinator: String?
        var serverKey: String?
        var curveKey: String?
        var job: String?
        var json = false

        /// Sets ``Connection/security`` as ``GlobalOptions/validate()`` does; false when a key cannot be
        /// read (then ArgumentParser reads the line again and reports it, as always). Without a server
        /// key (option or environment) no dictionary of the environment is made (issue 19: start time).
        func secure() -> Bool {
            let serverKeyVariable = Self.environment(CurveKeys.serverKeyVariable)
            guard serverKey != nil || serverKeyVariable != nil else { return true }
            var environment: [String: String] = [:]
            environment[CurveKeys.serverKeyVariable] = serverKeyVariable
            environment[CurveKeys.secretKeyVariable] = Self.environment(CurveKeys.secretKeyVariable)
            guard let security = try? ConnectionSecurity.fromEnvironment(serverKeyFile: serverKey, clientKeyFile: curveKey, environment: environment) else {
                return false
            }
            Connection.security = security
            return true
        }

        /// The endpoint, as ``GlobalOptions/endpoint``: the option, else `OPQ_COORDINATOR`, else the default.
        var endpoint: String { coordinator ?? Self.environment("OPQ_COORDINATOR") ?? GlobalOptions.defaultEndpoint }

        /// Runs the command (``StatusCommand/show(endpoint:job:json:)``).
        func run() throws(ExitStatus) { try StatusCommand.show(endpoint: endpoint, job: job, json: json) }

        /// Environment variable `name`, nil when unset or empty.
        static func environment(_ name: String) -> String? {
            guard let value = getenv(name), value.pointee != 0 else { return nil }
            return String(cString: value)
        }
    }

    /// `opq status [JOB] [--json]` with the global options, read without ArgumentParser: parsing even this
    /// one command through it costs ≈ 13M instructions at start — the runtime's first protocol-conformance
    /// lookups — about as much as the rest of the command, and so does making the command's property
    /// wrappers (`StatusCommand()`, `GlobalOptions()`), so none is made (issue 19). Any other word
    /// (`--help`, a mistake, `--`, a repeat) or a key that cannot be read gives nil, and ArgumentParser
    /// reads the line as always, with its messages.
    static func parsedByHand(_ arguments: [String]) -> HandParsed? {
        // The global options' values in ``OPQCommand/globalOptionNames`` order. (No dictionary: its first
        // generic instantiation alone is a scan of every protocol conformance at start.)
        var values: [String?] = [nil, nil, nil]
        var parsed = HandParsed()
        var rest = arguments[...]
        while let word = rest.popFirst() {
            if word == "--json", !parsed.json {
                parsed.json = true
            } else if let k = OPQCommand.globalOptionNames.firstIndex(where: { word == $0 || word.hasPrefix($0 + "=") }) {
                let name = OPQCommand.globalOptionNames[k]
                let value = word == name ? rest.popFirst() : String(word.dropFirst(name.count + 1))
                guard let value, !value.hasPrefix("-"), values[k] == nil else { return nil }
                values[k] = value
            } else if !word.hasPrefix("-"), parsed.job == nil {
                parsed.job = word
            } else {
                return nil
            }
        }
        parsed.coordinator = values[0]
        parsed.serverKey = values[1]
        parsed.curveKey = values[2]
        guard parsed.secure() else { return nil }
        return parsed
    }
}
