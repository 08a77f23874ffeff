import Foundation
import OPQClient
import OPQCore

/// The end-of-run report: counts per outcome, the slowest operations, and each failure with the
/// last lines of its output.
struct JobSummary {
    /// Every operation of the job (barriers included), in batch order, when fetched whole (``fetch(_:job:)``);
    /// empty when the coordinator counted (``fetchReport(_:job:)``).
    let operations: [OperationStatus]
    /// How many operations the job has, and of them how many ended how.
    let total: Int
    let succeeded: Int
    let upToDate: Int
    let failed: Int
    let cancelled: Int
    let unfinished: Int
    /// The operations that ran longest, longest first (at most ``slowestShown``).
    let slowest: [(status: OperationStatus, duration: Double)]
    /// The finished operations that did not succeed, in batch order.
    let failures: [OperationStatus]

    /// How many of the longest-running operations the report shows.
    static let slowestShown = 5

    /// Counted from every operation's status.
    init(operations: [OperationStatus]) {
        self.operations = operations
        total = operations.count
        succeeded = operations.filter { $0.outcome == .succeeded }.count
        upToDate = operations.filter { $0.outcome == .succeeded && $0.reason == .upToDate }.count
        failed = operations.filter { $0.outcome == .failed }.count
        cancelled = operations.filter { $0.outcome == .cancelled }.count
        unfinished = operations.filter { $0.state != .finished }.count
        // Longest first, ties in batch order (as the coordinator orders them).
        slowest = Array(operations.enumerated().compactMap { index, info in info.duration.map { (index, info, $0) } }
            .sorted { $0.2 != $1.2 ? $0.2 > $1.2 : $0.0 < $1.0 }.prefix(Self.slowestShown).map { ($0.1, $0.2) })
        failures = operations.filter { $0.state == .finished && $0.outcome != .succeeded }
    }

    /// As the coordinator counted it (``JobStatus/Summary``).
    init(_ summary: JobStatus.Summary) {
        operations = []
        total = summary.operations
        succeeded = summary.succeeded
        upToDate = summary.upToDate
        failed = summary.failed
        cancelled = summary.cancelled
        unfinished = summary.unfinished
        slowest = summary.slowest.compactMap { info in info.duration.map { (info, $0) } }
        failures = summary.unsucceeded
    }

    /// Fetches every operation of the job (for callers that show or list them all).
    static func fetch(_ connection: CoordinatorClient, job: JobID) throws(ClientError) -> JobSummary {
        JobSummary(operations: try connection.job(job).operations)
    }

    /// Fetches the job's end-of-run report: counted by the coordinator, which sends the few operations it
    /// shows rather than all of them (a coordinator that predates that: every operation, counted here).
    static func fetchReport(_ connection: CoordinatorClient, job: JobID) throws(ClientError) -> JobSummary {
        guard let summary = try connection.jobSummary(job, slowest: slowestShown).summary else { return try fetch(connection, job: job) }
        return JobSummary(summary)
    }

    func count(_ outcome: Outcome) -> Int {
        switch outcome {
        case .succeeded: succeeded
        case .failed: failed
        case .cancelled: cancelled
        }
    }

    /// True when every operation finished and succeeded.
    var allSucceeded: Bool { succeeded == total && unfinished == 0 }

    /// `seconds` in 10 columns: seconds with two decimals from one second on, milliseconds with one below
    /// (a command of a few milliseconds reads `     3.2 ms`, not `0.00 s`).
    static func duration(_ seconds: Double) -> String {
        seconds >= 0.9995 ? String(format: "%8.2f s", seconds) : String(format: "%7.1f ms", seconds * 1000)
    }

    /// Prints the report; fetches output tails of failed operations through `connection`.
    func print(title: String, elapsed: Double, connection: CoordinatorClient, outputLines: Int = 5) {
        var counts = ["succeeded \(succeeded)" + (upToDate > 0 ? " (\(upToDate) up to date, not run)" : ""), "failed \(failed)", "cancelled \(cancelled)"]
        if unfinished > 0 { counts.append("unfinished \(unfinished)") }
        Swift.print("")
        Swift.print("\(title): \(total) operations in \(String(format: "%.1f", elapsed)) s — " + counts.joined(separator: ", "))

        if !slowest.isEmpty {
            Swift.print("slowest:")
            for (info, duration) in slowest {
                Swift.print("  " + Self.duration(duration) + "  " + info.label)
            }
        }
        guard !failures.isEmpty else { return }
        Swift.print("not succeeded:")
        for info in failures {
            let detail = JobProgress.detail(outcome: info.outcome, reason: info.reason, exitCode: info.exitCode, signal: info.signal)
            Swift.print("  \(JobProgress.word(info.outcome)) \(info.label)" + (detail.isEmpty ? "" : ": \(detail)"))
            guard info.outcome == .failed, let full = try? connection.operation(info.id, includeOutput: true) else { continue }
            for stream in StandardStream.allCases {
                guard let tail = full.tail(stream), !tail.bytes.isEmpty else { continue }
                let text = String(decoding: tail.bytes, as: UTF8.self)
                let lines = text.split(separator: "\n", omittingEmptySubsequences: true).suffix(outputLines)
                for line in lines { Swift.print("      \(stream) | \(line)") }
            }
        }
    }
}
