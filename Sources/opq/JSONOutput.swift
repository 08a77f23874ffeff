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

    /// One reason an operation has not started: `{"kind": "dependencies"|"retryBackoff"|"queueSuspended"|
    /// "queueAtLimit"|"noWorker"|"workersBusy"|"tooLarge"|"resourcesBusy", "text": …}` plus `operations`, `queue`, `limit` or `labels`
    /// where the kind has them.
    static func blocker(_ blocker: Opq_V1_Blocker) -> [String: Any] {
        var object: [String: Any] = ["text": blocker.text]
        switch blocker.kind {
        case .dependencies: object["kind"] = "dependencies"; object["operations"] = blocker.operations
        case .retryBackoff: object["kind"] = "retryBackoff"
        case .queueSuspended: object["kind"] = "queueSuspended"; object["queue"] = blocker.queue
        case .queueAtLimit: object["kind"] = "queueAtLimit"; object["queue"] = blocker.queue; object["limit"] = blocker.limit
        case .noWorker: object["kind"] = "noWorker"; object["queue"] = blocker.queue; object["labels"] = blocker.labels
        case .workersBusy: object["kind"] = "workersBusy"
        case .tooLarge: object["kind"] = "tooLarge"
        case .resourcesBusy: object["kind"] = "resourcesBusy"
        case .unspecified, .UNRECOGNIZED: object["kind"] = "unknown"
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
            "ranOn": info.finishedBy.isEmpty ? NSNull() : info.finishedBy as Any,
            "startedAt": info.hasStartedAt ? time(info.startedAt, local: false) as Any : NSNull(),
            "endedAt": info.hasEndedAt ? time(info.endedAt, local: false) as Any : NSNull(),
            "exitCode": info.hasExitCode ? info.exitCode as Any : NSNull(),
            "barrier": info.barrier,
            "durationSeconds": info.hasDurationSeconds ? info.durationSeconds as Any : NSNull(),
        ]
    }
}
