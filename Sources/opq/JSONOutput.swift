import Foundation
import OPQWire

/// `--json` output: stable field names, sorted keys, one document per line.
enum JSONOutput {
    static func string(_ object: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return "null"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A submission's receipt as `submit`, `add` and `map` print it: `{"job": ID, "operations": [{"id": ID, "name": NAME}, ...]}`.
    static func receipt(_ receipt: Opq_V1_SubmitAccepted, names: [String]) -> String {
        string(["job": receipt.job, "operations": zip(receipt.operations, names).map { ["id": $0, "name": $1] as [String: Any] }])
    }

    /// An operation as the CLI documents it: id, name, job, queue, state, outcome, priority, attempts, worker, exitCode.
    static func operation(_ info: Opq_V1_OperationInfo) -> [String: Any] {
        [
            "id": info.id,
            "name": info.name,
            "job": info.job,
            "queue": info.queue,
            "state": info.coreState?.description ?? "unknown",
            "outcome": info.outcome.core.map { $0.description as Any } ?? NSNull(),
            "priority": info.queuePriority.description,
            "attempts": info.attempt,
            "worker": info.worker.isEmpty ? NSNull() : info.worker as Any,
            "exitCode": info.hasExitCode ? info.exitCode as Any : NSNull(),
            "barrier": info.barrier,
            "durationSeconds": info.hasDurationSeconds ? info.durationSeconds as Any : NSNull(),
        ]
    }
}
