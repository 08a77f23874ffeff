import OPQCore

extension JobFile {
    /// The file waiting for earlier jobs (`after_jobs:`, `opq submit --after`), given every operation id of
    /// those jobs: one empty operation named `after job-N …` depends on all of them with `requires: success`,
    /// and every operation that depends on nothing in the file depends on it. So each of the file's
    /// operations starts only once those jobs have finished, and one with `requires: success` is cancelled
    /// (dependency failed) if any of their operations did not succeed; `requires: any` runs regardless.
    /// The join is appended last, so the file's own operations keep their positions (and error lines).
    public func waiting(forJobs jobs: [JobID], operations ids: [OperationID]) -> JobFile {
        guard !jobs.isEmpty else { return self }
        var copy = self
        let name = "after " + jobs.map { "job-\($0.rawValue)" }.joined(separator: " ")
        for k in copy.submission.operations.indices
        where !copy.submission.operations[k].dependencies.contains(where: { if case .name = $0 { true } else { false } }) {
            copy.submission.operations[k].dependencies.append(.name(name))
        }
        let queue = submission.operations.first?.queue ?? "default"
        copy.submission.operations.append(OperationSpec(name: name, queue: queue, dependencies: ids.map { .id($0) }, requires: .success))
        return copy
    }
}
