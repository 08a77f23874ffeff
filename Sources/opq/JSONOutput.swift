import Foundation
import OPQClient
import OPQCore

/// `--json` output: stable field names, sorted keys, one document per line.
enum JSONOutput {
    static func string(_ object: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return "null"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A submission's receipt as `submit`, `add` and `map` print it: `{"job": ID, "operations": [{"id": ID, "name": NAME}, ...]}`.
    static func receipt(_ receipt: JobReceipt, names: [String]) -> String {
        string(["job": receipt.job.rawValue, "operations": zip(receipt.operations, names).map { ["id": $0.rawValue, "name": $1] as [String: Any] }])
    }

    /// One reason an operation has not started: `{"kind": "dependencies"|"retryBackoff"|"queueSuspended"|
    /// "queueAtLimit"|"noWorker"|"workersBusy"|"tooLarge"|"resourcesBusy", "text": …}` plus `operations`, `queue`, `limit` or `labels`
    /// where the kind has them.
    static func blocker(_ blocker: OperationStatus.Blocker) -> [String: Any] {
        var object: [String: Any] = ["text": blocker.text, "kind": blocker.kind.rawValue]
        switch blocker.kind {
        case .dependencies: object["operations"] = blocker.operations.map(\.rawValue)
        case .queueSuspended: object["queue"] = blocker.queue
        case .queueAtLimit: object["queue"] = blocker.queue; object["limit"] = blocker.limit
        case .noWorker: object["queue"] = blocker.queue; object["labels"] = blocker.labels
        case .retryBackoff, .workersBusy, .tooLarge, .resourcesBusy, .unknown: break
        }
        return object
    }

    /// The `"version"` of the objects `opq show --json` and `opq status --json` print: raised when a
    /// field changes meaning or goes away (new fields may appear without it).
    static let version = 1

    /// Unix seconds as ISO-8601 with milliseconds: in the local time zone, or UTC (`Z`).
    static func time(_ seconds: Double, local: Bool) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = local ? .current : TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: seconds))
    }

    /// An operation as the CLI documents it: id, name, job, queue, state, outcome, priority, attempts, worker
    /// (holding the current attempt), ranOn, startedAt, endedAt (of the attempt that finished it), exitCode.
    static func operation(_ info: OperationStatus) -> [String: Any] {
        [
            "id": info.id.rawValue,
            "name": info.name,
            "job": info.job.rawValue,
            "queue": info.queue,
            "state": info.state?.description ?? "unknown",
            "outcome": info.outcome.map { $0.description as Any } ?? NSNull(),
            "priority": info.priority.description,
            "attempts": info.attempt,
            "worker": info.worker.map { $0 as Any } ?? NSNull(),
            "ranOn": info.finishedBy.map { $0 as Any } ?? NSNull(),
            "startedAt": info.startedAt.map { time($0, local: false) as Any } ?? NSNull(),
            "endedAt": info.endedAt.map { time($0, local: false) as Any } ?? NSNull(),
            "exitCode": info.exitCode.map { $0 as Any } ?? NSNull(),
            "barrier": info.isBarrier,
            "durationSeconds": info.duration.map { $0 as Any } ?? NSNull(),
        ]
    }
}
