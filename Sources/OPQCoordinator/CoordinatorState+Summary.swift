import OPQCore
import OPQWire

extension CoordinatorState {
    /// The end-of-run report of the job whose operations are `operations` (`GetJob.summary_slowest`):
    /// counts over every operation, the `slowest` finished ones that ran longest and every finished one
    /// that did not succeed. Counted here, so a client that ran a job of thousands of commands reads a few
    /// operations' details instead of all of them (`opq map` over 2,000 items: ≈ 190 KB encoded here and
    /// decoded there at its end, while nothing else happened).
    func jobSummary(of operations: [OperationID], slowest: Int) -> Opq_V1_JobSummary {
        var summary = Opq_V1_JobSummary()
        summary.operations = UInt64(operations.count)
        var timed: [(duration: Double, index: Int)] = []
        var unsucceeded: [OperationID] = []
        for (index, id) in operations.enumerated() {
            // Timed: every operation with a finish report (OperationInfo.duration_seconds), as a client sees it.
            if slowest > 0, let duration = outputs[id]?.duration { timed.append((duration, index)) }
            guard let ending = core.ending(of: id), ending.state == .finished else {
                summary.unfinished += 1
                continue
            }
            switch ending.outcome {
            case .succeeded:
                summary.succeeded += 1
                if ending.reason == .upToDate { summary.upToDate += 1 }
            case .failed:
                summary.failed += 1
                unsucceeded.append(id)
            case .cancelled:
                summary.cancelled += 1
                unsucceeded.append(id)
            case nil:
                unsucceeded.append(id)
            }
        }
        // Longest first, ties in batch order: what sorting every operation's status by duration gave.
        let longest = timed.sorted { $0.duration != $1.duration ? $0.duration > $1.duration : $0.index < $1.index }.prefix(slowest)
        summary.slowest = longest.map { operationInfo(operations[$0.index], includeOutput: false).info }
        summary.unsucceeded = unsucceeded.map { operationInfo($0, includeOutput: false).info }
        return summary
    }
}
