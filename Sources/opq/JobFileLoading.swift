import Foundation
import OPQClient
import OPQCore
import OPQJobFile

/// Reading a job file for a command: any mistake is printed (`FILE:LINE: …`) and ends the command with
/// exit status 2, before anything is submitted.
enum JobFileLoading {
    /// `force`: drop `inputs`/`outputs`, so every operation runs (`--force`).
    static func load(_ path: String, force: Bool = false) throws(ExitStatus) -> JobFile {
        do {
            let jobFile = try JobFile.load(path: path)
            return force ? jobFile.forcingEveryOperation() : jobFile
        } catch {
            printError("\(error)")
            throw ExitStatus.usage
        }
    }

    /// A refused submit: the coordinator's submission error located in the file (exit 2), or
    /// another failure (exit 2 for refusals, 3 for transport trouble).
    static func status(for error: ClientError, jobFile: JobFile) -> ExitStatus {
        if case .refused(let refusal) = error, let submissionError = refusal.submissionError {
            printError("\(jobFile.locate(submissionError))")
            return .usage
        }
        return Connection.status(for: error)
    }

    /// `after_jobs:` plus `--after` (`job-N` or `N`): the file waiting for those jobs of the coordinator
    /// at `connection` (see ``JobFile/waiting(forJobs:operations:)``). An unknown job ends with status 2.
    static func waitingForJobs(_ jobFile: JobFile, adding written: [String], connection: CoordinatorClient) throws(ExitStatus) -> JobFile {
        var jobs = jobFile.afterJobs
        for text in written {
            guard case .job(let job)? = TargetID(text, bare: { .job(JobID($0)) }) else {
                throw fail(.usage, "--after '\(text)' is not a job id (write job-N)")
            }
            jobs.append(job)
        }
        var seen: Set<JobID> = []
        jobs = jobs.filter { seen.insert($0).inserted }
        var operations: [OperationID] = []
        for job in jobs {
            do {
                operations += try JobSummary.fetch(connection, job: job).operations.map(\.id)
            } catch {
                throw Connection.status(for: error)
            }
        }
        return jobFile.waiting(forJobs: jobs, operations: operations)
    }
}
