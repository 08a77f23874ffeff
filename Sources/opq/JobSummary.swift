import Foundation
import OPQClient
import OPQCore
import OPQWire

/// The end-of-run report: counts per outcome, the slowest operations, and each failure with the
/// last lines of its output.
struct JobSummary {
    /// Every operation of the job (barriers included), in batch order.
    let operations: [Opq_V1_OperationInfo]

    /// Fetches the job's operations.
    static func fetch(_ connection: CoordinatorConnection, job: UInt64) throws(ClientError) -> JobSummary {
        let reply = try connection.request {
            $0.getJob.job = job
            $0.getJob.includeOperations = true
        }.reply
        return JobSummary(operations: reply.job.details)
    }

    func count(_ outcome: Opq_V1_Outcome) -> Int { operations.filter { $0.outcome == outcome }.count }

    /// True when every operation finished and succeeded.
    var allSucceeded: Bool { operations.allSatisfy { $0.state == .finished && $0.outcome == .succeeded } }

    static func label(_ info: Opq_V1_OperationInfo) -> String {
        info.name.isEmpty ? "op-\(info.id)" : "\(info.name) (op-\(info.id))"
    }

    /// Prints the report; fetches output tails of failed operations through `connection`.
    func print(title: String, elapsed: Double, connection: CoordinatorConnection, outputLines: Int = 5) {
        let upToDate = operations.filter { $0.outcome == .succeeded && $0.reason == .upToDate }.count
        var counts = ["succeeded \(count(.succeeded))" + (upToDate > 0 ? " (\(upToDate) up to date, not run)" : ""), "failed \(count(.failed))", "cancelled \(count(.cancelled))"]
        let unfinished = operations.filter { $0.state != .finished }.count
        if unfinished > 0 { counts.append("unfinished \(unfinished)") }
        Swift.print("")
        Swift.print("\(title): \(operations.count) operations in \(String(format: "%.1f", elapsed)) s — " + counts.joined(separator: ", "))

        let timed = operations.filter { $0.hasDurationSeconds }.sorted { $0.durationSeconds > $1.durationSeconds }
        if !timed.isEmpty {
            Swift.print("slowest:")
            for info in timed.prefix(5) {
                Swift.print(String(format: "  %8.2f s  ", info.durationSeconds) + Self.label(info))
            }
        }
        let failures = operations.filter { $0.state == .finished && $0.outcome != .succeeded }
        guard !failures.isEmpty else { return }
        Swift.print("not succeeded:")
        for info in failures {
            let detail = JobProgress.detail(outcome: info.outcome, reason: info.reason,
                                            exitCode: info.hasExitCode ? info.exitCode : nil, signal: info.hasSignal ? info.signal : nil)
            Swift.print("  \(JobProgress.word(info.outcome)) \(Self.label(info))" + (detail.isEmpty ? "" : ": \(detail)"))
            guard info.outcome == .failed, let (full, raw) = try? connection.operation(OperationID(info.id), includeOutput: true) else { continue }
            for (stream, tail) in [("stdout", full.stdout), ("stderr", full.stderr)] {
                guard tail.frame > 0, Int(tail.frame) <= raw.count else { continue }
                let text = String(decoding: raw[Int(tail.frame) - 1], as: UTF8.self)
                let lines = text.split(separator: "\n", omittingEmptySubsequences: true).suffix(outputLines)
                for line in lines { Swift.print("      \(stream) | \(line)") }
            }
        }
    }
}
