import Foundation
import OPQClient
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
}
