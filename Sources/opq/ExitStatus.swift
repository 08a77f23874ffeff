import Foundation

/// The exit statuses of `opq` (documented in `opq --help` and the README). Thrown to end a command.
enum ExitStatus: Int32, Error {
    /// Every operation succeeded, or the command did what it was asked.
    case success = 0
    /// Some operation failed or was cancelled.
    case someFailed = 1
    /// A usage or job-file error; nothing was submitted.
    case usage = 2
    /// The coordinator could not be reached.
    case unreachable = 3
    /// Interrupted by SIGINT/SIGTERM (after cleaning up).
    case interrupted = 130
}

/// Writes a line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Prints `message` to standard error prefixed with `opq: ` and returns `status` to throw.
func fail(_ status: ExitStatus, _ message: String) -> ExitStatus {
    printError("opq: \(message)")
    return status
}
