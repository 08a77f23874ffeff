import OPQCore

/// What a command-line id names: `job-3`, `op-12`, or a bare number (whose meaning the command decides).
enum TargetID {
    case job(JobID)
    case operation(OperationID)

    /// Parses `job-N`, `op-N`, or `N` (taken as `bare`).
    init?(_ text: String, bare: (UInt64) -> TargetID) {
        if text.hasPrefix("job-"), let value = UInt64(text.dropFirst(4)), value > 0 {
            self = .job(JobID(value))
        } else if text.hasPrefix("op-"), let value = UInt64(text.dropFirst(3)), value > 0 {
            self = .operation(OperationID(value))
        } else if let value = UInt64(text), value > 0 {
            self = bare(value)
        } else {
            return nil
        }
    }
}
