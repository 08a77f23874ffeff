import OPQCore

extension JobFile {
    /// The first operation (in file order) that needs more than `capacity` — what every worker of a
    /// cluster that is known to stay as it is offers (`opq run`'s own local workers) — as an error at the
    /// line of its `cpus:` or `memory:`, with `advice` (what to change) appended; nil when all fit.
    /// On a coordinator that workers may still join, such an operation waits with a reason instead
    /// (README "Resources", R2); only a static cluster refuses it up front.
    public func firstTooLarge(for capacity: Resources, workers: String, advice: String) -> JobFileError? {
        for (k, spec) in submission.operations.enumerated() where !spec.work.isEmpty {
            let needs = spec.resources
            guard needs.cpus > capacity.cpus || needs.memory > capacity.memory else { continue }
            let field = needs.cpus > capacity.cpus ? "cpus" : "memory"
            let offered = field == "cpus" ? "\(capacity.cpus) cpus" : "\(ByteSize.format(capacity.memory)) of memory"
            let needed = field == "cpus" ? "\(needs.cpus) cpus" : "\(ByteSize.format(needs.memory)) of memory"
            return JobFileError(file: file, line: fieldLines.line(k, field) ?? operationLines[k],
                                subject: spec.name.isEmpty ? "operation #\(k + 1)" : JobFileParser.subject(named: spec.name), field: field,
                                message: "needs \(needed); \(workers) have \(offered), so it could never run (\(advice))")
        }
        return nil
    }
}
