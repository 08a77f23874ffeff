import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQWire

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
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "job-N or N; omit for an overview.")
    var job: String?

    @Flag(help: "Print JSON with stable field names (operations: id, name, job, queue, state, outcome, priority, attempts, worker, exitCode).")
    var json = false

    func run() throws {
        let connection = try Connection.open(global.endpoint)
        do {
            if let job {
                guard case .job(let id)? = TargetID(job, bare: { .job(JobID($0)) }) else {
                    throw fail(.usage, "'\(job)' is not a job id (write job-N)")
                }
                try showJob(connection, id.rawValue)
            } else {
                try showOverview(connection)
            }
        } catch let error as ClientError {
            throw Connection.status(for: error)
        }
    }

    private func showJob(_ connection: CoordinatorConnection, _ job: UInt64) throws(ClientError) {
        let info = try connection.request {
            $0.getJob.job = job
            $0.getJob.includeOperations = true
        }.reply.job
        if json {
            print(JSONOutput.string(["version": JSONOutput.version, "job": info.id, "finished": info.finished, "counts": Self.counts(info.counts),
                                     "operations": info.details.map(JSONOutput.operation)]))
            return
        }
        print("job-\(info.id): \(info.finished ? "finished" : "running") — " + Self.describe(info.counts))
        for op in info.details {
            let state = op.state == .finished ? JobProgress.word(op.outcome) : (op.coreState?.description ?? "?")
            var line = "  op-\(op.id)".padding(toLength: 10, withPad: " ", startingAt: 0) + " "
            line += (op.name.isEmpty ? "-" : op.name).padding(toLength: 20, withPad: " ", startingAt: 0) + " "
            line += state.padding(toLength: 10, withPad: " ", startingAt: 0) + " queue \(op.queue)"
            if op.hasExitCode { line += ", exit \(op.exitCode)" }
            if op.hasDurationSeconds { line += String(format: ", %.2f s", op.durationSeconds) }
            if !op.worker.isEmpty { line += ", on \(op.worker)" }
            print(line)
        }
    }

    private func showOverview(_ connection: CoordinatorConnection) throws(ClientError) {
        let jobs = try connection.request { $0.listJobs = Opq_V1_ListJobs() }.reply.jobs.jobs
        let queues = try connection.request { $0.listQueues = Opq_V1_ListQueues() }.reply.queues.queues
        if json {
            print(JSONOutput.string([
                "version": JSONOutput.version,
                "jobs": jobs.map { ["id": $0.id, "finished": $0.finished, "counts": Self.counts($0.counts)] as [String: Any] },
                "queues": queues.map {
                    ["name": $0.name, "maxConcurrent": $0.maxConcurrent, "suspended": $0.suspended, "counts": Self.counts($0.counts)] as [String: Any]
                },
            ]))
            return
        }
        print(jobs.isEmpty ? "no jobs" : "jobs:")
        for job in jobs { print("  job-\(job.id): \(job.finished ? "finished" : "running") — " + Self.describe(job.counts)) }
        print(queues.isEmpty ? "no queues" : "queues:")
        for queue in queues {
            let limit = queue.maxConcurrent < 0 ? "no limit" : "maxConcurrent \(queue.maxConcurrent)"
            print("  \(queue.name): \(limit)\(queue.suspended ? ", suspended" : "") — " + Self.describe(queue.counts))
            for line in queue.tooLarge { print("    waiting: \(line)") }
        }
    }

    static func counts(_ counts: Opq_V1_Counts) -> [String: UInt64] {
        ["pending": counts.pending, "ready": counts.ready, "dispatched": counts.dispatched, "executing": counts.executing,
         "succeeded": counts.succeeded, "failed": counts.failed, "cancelled": counts.cancelled]
    }

    static func describe(_ counts: Opq_V1_Counts) -> String {
        let finished = counts.succeeded + counts.failed + counts.cancelled
        let total = finished + counts.pending + counts.ready + counts.dispatched + counts.executing
        return "\(finished)/\(total) finished (\(counts.succeeded) succeeded, \(counts.failed) failed, \(counts.cancelled) cancelled), "
            + "\(counts.dispatched + counts.executing) running, \(counts.pending + counts.ready) waiting"
    }
}
