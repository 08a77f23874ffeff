import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQWire

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
    )

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
                let summary = try Self.waitForJob(connection, job: job.rawValue, timeout: timeout)
                let counts = ["succeeded", "failed", "cancelled"].enumerated().map { k, word in
                    "\(summary.count([.succeeded, .failed, .cancelled][k])) \(word)"
                }
                let unfinished = summary.operations.filter { $0.state != .finished }.count
                if json {
                    print(JSONOutput.string(["job": job.rawValue, "finished": unfinished == 0,
                                             "operations": summary.operations.map(JSONOutput.operation)]))
                } else {
                    print("job-\(job.rawValue): " + counts.joined(separator: ", ") + (unfinished > 0 ? ", \(unfinished) unfinished (timed out)" : ""))
                }
                if !summary.allSucceeded { throw ExitStatus.someFailed }
            case .operation(let operation):
                let info = try Self.waitForOperation(connection, operation: operation.rawValue, timeout: timeout)
                let word = info.state == .finished ? JobProgress.word(info.outcome) : "unfinished (timed out)"
                print(json ? JSONOutput.string(JSONOutput.operation(info)) : "\(JobSummary.label(info)): \(word)")
                if info.state != .finished || info.outcome != .succeeded { throw ExitStatus.someFailed }
            }
        } catch let error as ClientError {
            throw Connection.status(for: error)
        }
    }

    /// Waits in slices (so Ctrl-C is noticed) until the job finished or `timeout` passed; returns its operations.
    static func waitForJob(_ connection: CoordinatorConnection, job: UInt64, timeout: Double? = nil) throws -> JobSummary {
        if try blockUntilFinished(connection, job: job, deadline: timeout.map { Date().addingTimeInterval($0) }) == .interrupted {
            throw fail(.interrupted, "interrupted")
        }
        return try JobSummary.fetch(connection, job: job)
    }

    /// Blocks on Wait requests in short slices until the job has finished (`.finished`), a signal came
    /// (`.interrupted`), `isAlive` says the cluster is gone (`.lost`) or the deadline passed (`.finished`
    /// too: the caller reads the job's state).
    static func blockUntilFinished(_ connection: CoordinatorConnection, job: UInt64, deadline: Date? = nil,
                                   isAlive: () -> Bool = { true }) throws(ClientError) -> JobProgress.Ending {
        while true {
            if SignalTrap.count > 0 { return .interrupted }
            if !isAlive() { return .lost }
            let slice = min(0.25, deadline.map { max(0, $0.timeIntervalSinceNow) } ?? 0.25)
            let result = try connection.wait(job: JobID(job), timeout: slice)
            if !result.timedOut || deadline.map({ Date() >= $0 }) == true { return .finished }
        }
    }

    /// Waits in slices until the operation finished or `timeout` passed; returns its info.
    static func waitForOperation(_ connection: CoordinatorConnection, operation: UInt64, timeout: Double?) throws -> Opq_V1_OperationInfo {
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        while true {
            if SignalTrap.count > 0 { throw fail(.interrupted, "interrupted") }
            let slice = min(1, deadline.map { max(0, $0.timeIntervalSinceNow) } ?? 1)
            let result = try connection.request(timeout: slice + 5) {
                $0.wait.operation = operation
                $0.wait.timeoutSeconds = slice
            }.reply.waited
            if !result.timedOut || deadline.map({ Date() >= $0 }) == true { return result.operation }
        }
    }
}
