import OPQCore

/// What a command-line id names: `job-3`, `op-12`, a reservation `op-r3` (an operation a client
/// program will add later, that others already wait for), or a bare number (whose meaning the command
/// decides).
enum TargetID {
    case job(JobID)
    case operation(OperationID)

    /// Parses `job-N`, `op-N`, `op-rN`, or `N` (taken as `bare`).
    init?(_ text: String, bare: (UInt64) -> TargetID) {
        if text.hasPrefix("job-"), let value = UInt64(text.dropFirst(4)), value > 0 {
            self = .job(JobID(value))
        } else if let id = OperationID(parsing: text) {
            self = .operation(id)
        } else if let value = UInt64(text), value > 0 {
            self = bare(value)
        } else {
            return nil
        }
    }
}
