import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq wait JOB|OP`: block until a job or an operation has finished.
struct WaitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until a job (or one operation) has finished; exit 0 only if everything succeeded.",
        discussion: """
            A job that has already finished returns at once. Ids are written job-N or op-N; a bare
            number is a job.

            Examples:
              opq wait job-3 && echo "all good"
              opq wait op-17 --timeout 60
              opq wait "$(opq submit jobs.yaml)"

            Exit status: 0 everything succeeded; 1 something failed or was cancelled, or the timeout
            passed first; 2 bad id or unknown job/operation; 3 cannot reach the coordinator.
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Argument(help: "job-N, op-N, or N (a job).")
    var target: String

    @Option(help: ArgumentHelp("Give up after this many seconds (default: wait as long as it takes).", valueName: "seconds"))
    var timeout: Double?

    @Flag(help: "Print the job (as opq status --json does) or the operation (as opq show --json) when the wait ends.")
    var json = false

    func run() throws {
        guard let id = TargetID(target, bare: { .job(JobID($0)) }) else {
            throw fail(.usage, "'\(target)' is not a job or operation id (write job-N or op-N)")
        }
        let connection = try Connection.open(global.endpoint)
        SignalTrap.install()
        do {
            switch id {
            case .job(let job):
                let summary = try Self.waitForJob(connection, job: job, timeout: timeout, everyOperation: json)
                let counts = ["succeeded", "failed", "cancelled"].enumerated().map { k, word in
                    "\(summary.count([Outcome.succeeded, .failed, .cancelled][k])) \(word)"
                }
                let unfinished = summary.unfinished
                if json {
                    print(JSONOutput.string(["job": job.rawValue, "finished": unfinished == 0,
                                             "operations": summary.operations.map(JSONOutput.operation)]))
                } else {
                    print("job-\(job.rawValue): " + counts.joined(separator: ", ") + (unfinished > 0 ? ", \(unfinished) unfinished (timed out)" : ""))
                }
                if !summary.allSucceeded { throw ExitStatus.someFailed }
            case .operation(let operation):
                let info = try Self.waitForOperation(connection, operation: operation, timeout: timeout)
                let word = info.state == .finished ? JobProgress.word(info.outcome) : "unfinished (timed out)"
                print(json ? JSONOutput.string(JSONOutput.operation(info)) : "\(info.label): \(word)")
                if !info.succeeded { throw ExitStatus.someFailed }
            }
        } catch let error as ClientError {
            throw Connection.status(for: error)
        }
    }

    /// Waits until the job finished or `timeout` passed; returns its summary, with every operation's status
    /// when `everyOperation` (else as the coordinator counts it). A signal ends the wait at once (exit status 130).
    static func waitForJob(_ connection: CoordinatorClient, job: JobID, timeout: Double? = nil,
                           everyOperation: Bool = false) throws -> JobSummary {
        if try blockUntilFinished(connection, job: job, timeout: timeout) == .interrupted {
            throw fail(.interrupted, "interrupted")
        }
        return try everyOperation ? JobSummary.fetch(connection, job: job) : JobSummary.fetchReport(connection, job: job)
    }

    /// Blocks on one Wait request until the job has finished (`.finished`), a signal came
    /// (`.interrupted`), `isAlive` says the cluster is gone (`.lost`) or `timeout` passed (`.finished`
    /// too: the caller reads the job's state). Woken by the reply or by ``WakePipe``, never in slices.
    static func blockUntilFinished(_ connection: CoordinatorClient, job: JobID, timeout: Double? = nil,
                                   isAlive: @escaping () -> Bool = { true }) throws(ClientError) -> JobProgress.Ending {
        if SignalTrap.count > 0 { return .interrupted }
        if !isAlive() { return .lost }
        let interruption = WakePipe.interruption { SignalTrap.count > 0 || !isAlive() }
        switch try connection.wait(for: .job(job), timeout: timeout, interruption: interruption) {
        case .finished, .timedOut: return .finished
        case .interrupted: return SignalTrap.count > 0 ? .interrupted : .lost
        }
    }

    /// Waits until the operation finished or `timeout` passed; returns its status. A signal ends the
    /// wait at once (exit status 130).
    static func waitForOperation(_ connection: CoordinatorClient, operation: OperationID, timeout: Double?) throws -> OperationStatus {
        if SignalTrap.count > 0 { throw fail(.interrupted, "interrupted") }
        let interruption = WakePipe.interruption { SignalTrap.count > 0 }
        if try connection.wait(for: .operation(operation), timeout: timeout, interruption: interruption) == .interrupted {
            throw fail(.interrupted, "interrupted")
        }
        return try connection.operation(operation)
    }
}
