import OPQCore
import OPQJournal
import OPQWire

extension CoordinatorState {
    /// Keeps the finish report `output` of `id`: its result in ``results``, the rest in ``outputs``.
    mutating func keep(_ output: OperationOutput, for id: OperationID) {
        outputs.record(output.withoutResult, for: id)
        results.record(output.result, for: id)
    }

    /// How the explicit dependencies of `id` finished, with their results, for its dispatch: all of them
    /// for handler `work`; for commands only those with a result (the worker puts them in the commands'
    /// environment), and nothing at all while no operation has a result (command-only workloads pay
    /// nothing). Results are left out, marked omitted, once they would pass
    /// `Limits.maxDispatchResultBytes` in all.
    /// - Complexity: O(d) for d dependencies.
    func dependencyOutcomes(of id: OperationID, work: Work) -> [Opq_V1_DependencyOutcome] {
        let isHandler = switch work { case .handler, .handlers: true; default: false }
        guard isHandler || !results.isEmpty else { return [] }
        let dependencies = core.dependencies(of: id)
        guard !dependencies.isEmpty else { return [] }
        var budget = Limits.maxDispatchResultBytes
        return dependencies.compactMap { dependency in
            guard isHandler || results[dependency] != nil else { return nil }
            guard let finished = core.finishedOutcome(of: dependency) else { return nil }
            let outcome = finished.outcome
            return .with {
                $0.operation = dependency.rawValue
                $0.name = finished.name
                $0.outcome = Opq_V1_Outcome(outcome)
                guard let result = results[dependency] else { return }
                if result.count <= budget {
                    $0.result = .init(result)
                    budget -= result.count
                } else {
                    $0.resultOmitted = true
                }
            }
        }
    }

    /// Fills `info.result` for `id`: its size always, the bytes as a raw frame when `include`.
    func attachResult(of id: OperationID, to info: inout Opq_V1_OperationInfo, raw: inout [[UInt8]], include: Bool) {
        guard let result = results[id] else { return }
        info.result = include ? Opq_V1_OutputTail.attach(result, to: &raw) : .with { $0.totalBytes = UInt64(result.count) }
    }
}

extension Array where Element == Opq_V1_Order {
    /// Most dependency result bytes one `Orders` message carries (32 MiB: with the rest of a full batch it
    /// stays well under `WireLimits.maxFrameBytes`, which a worker's socket enforces).
    static let maxResultBytesPerBatch = 32 << 20

    /// The orders in batches for `Orders` messages: at most `WireLimits.maxBatchItems` each, and a new
    /// batch before the dispatches' dependency results would pass ``maxResultBytesPerBatch``.
    /// - Complexity: O(n) for n orders.
    func orderBatches() -> [ArraySlice<Opq_V1_Order>] {
        var batches: [ArraySlice<Opq_V1_Order>] = []
        var start = startIndex
        var resultBytes = 0
        for index in indices {
            var bytes = 0
            if case .dispatch(let dispatch)? = self[index].kind, !dispatch.dependencies.isEmpty {
                bytes = dispatch.dependencies.reduce(0) { $0 + $1.result.count }
            }
            if index > start, index - start == WireLimits.maxBatchItems || resultBytes + bytes > Self.maxResultBytesPerBatch {
                batches.append(self[start..<index])
                start = index
                resultBytes = 0
            }
            resultBytes += bytes
        }
        if start < endIndex { batches.append(self[start..<endIndex]) }
        return batches
    }
}
