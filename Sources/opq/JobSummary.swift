import Foundation
import OPQClient
import OPQCore

/// The end-of-run report: counts per outcome, the slowest operations, and each failure with the
/// last lines of its output.
struct JobSummary {
    /// Every operation of the job (barriers included), in batch order.
    let operations: [OperationStatus]

    /// Fetches the job's operations.
    static func fetch(_ connection: CoordinatorClient, job: JobID) throws(ClientError) -> JobSummary {
        JobSummary(operations: try connection.job(job).operations)
    }

    func count(_ outcome: Outcome) -> Int { operations.filter { $0.outcome == outcome }.count }

    /// True when every operation finished and succeeded.
    var allSucceeded: Bool { operations.allSatisfy(\.succeeded) }

    /// `seconds` in 10 columns: seconds with two decimals from one second on, milliseconds with one below
    /// (a command of a few milliseconds reads `     3.2 ms`, not `0.00 s`).
    static func duration(_ seconds: Double) -> String {
        seconds >= 0.9995 ? String(format: "%8.2f s", seconds) : String(format: "%7.1f ms", seconds * 1000)
    }

    /// Prints the report; fetches output tails of failed operations through `connection`.
    func print(title: String, elapsed: Double, connection: CoordinatorClient, outputLines: Int = 5) {
        let upToDate = operations.filter { $0.outcome == .succeeded && $0.reason == .upToDate }.count
        var counts = ["succeeded \(count(.succeeded))" + (upToDate > 0 ? " (\(upToDate) up to date, not run)" : ""), "failed \(count(.failed))", "cancelled \(count(.cancelled))"]
        let unfinished = operations.filter { $0.state != .finished }.count
        if unfinished > 0 { counts.append("unfinished \(unfinished)") }
        Swift.print("")
        Swift.print("\(title): \(operations.count) operations in \(String(format: "%.1f", elapsed)) s — " + counts.joined(separator: ", "))

        let timed = operations.compactMap { info in info.duration.map { (info, $0) } }.sorted { $0.1 > $1.1 }
        if !timed.isEmpty {
            Swift.print("slowest:")
            for (info, duration) in timed.prefix(5) {
                Swift.print("  " + Self.duration(duration) + "  " + info.label)
            }
        }
        let failures = operations.filter { $0.state == .finished && $0.outcome != .succeeded }
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
