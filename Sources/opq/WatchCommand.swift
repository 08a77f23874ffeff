import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq watch [JOB]`: live progress of one job, or of everything.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Show live progress of a job (or of everything) until it finishes.",
        discussion: """
            On a terminal: one updating line — a bar of done/total, counts by outcome, running, rate and ETA — with every operation that did not succeed printed above it. Otherwise (a pipe, a file, CI logs): plain lines, one per start and per finish, with elapsed time.

            With a job, it ends when the job has finished (at once if it already has) with the job's status; without one it follows every operation until Ctrl-C. A watcher never misses a finish: it starts from a snapshot and then follows numbered events.

            Examples:
              opq watch job-3
              opq watch "$(opq submit jobs.yaml)" && echo all succeeded
              opq watch | grep failed          # plain lines, everything, until Ctrl-C
              opq watch job-3 --json | jq -c 'select(.event == "finished")'


            Exit status (with a job): 0 every operation succeeded; 1 some failed or were cancelled; 2 bad id or unknown job; 3 cannot reach the coordinator. Without a job: 0 after Ctrl-C.
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Argument(help: "job-N or N; none: every operation.")
    var job: String?

    @Flag(help: "Plain lines only for operations that did not succeed.")
    var failuresOnly = false

    @Flag(help: "One JSON object per line for every start and finish: event, id, name, job, worker, attempt, time; outcome, reason, exitCode, signal for a finish.")
    var json = false

    func run() throws {
        var scope = JobProgress.Scope.all
        if let job {
            guard let target = TargetID(job, bare: { .job(JobID($0)) }), case .job(let id) = target else {
                throw fail(.usage, "'\(job)' is not a job id (write job-N)")
            }
            scope = .job(id)
        }
        let connection = try Connection.open(global.endpoint)
        SignalTrap.install()
        let progress = JobProgress(connection: connection, scope: scope, interactive: isatty(STDOUT_FILENO) == 1,
                                   verbosity: failuresOnly ? .failures : .everything)
        progress.announces = true
        progress.emitsJSON = json
        do {
            switch try progress.follow() {
            case .interrupted, .lost:
                if case .job = scope { throw ExitStatus.interrupted }
            case .finished:
                guard case .job(let id) = scope else { return }
                let summary = try JobSummary.fetchReport(connection, job: id)
                if !summary.allSucceeded { throw ExitStatus.someFailed }
            }
        } catch let error as ClientError {
            throw Connection.status(for: error)
        }
    }
}
