/// Sizes of what one submission may hold. The wire (`OPQWire.WireLimits`) refuses anything beyond them;
/// job files and `opq map` check them where the text enters, so the error names `file:line` or the input
/// item instead of a wire field path.
extension Limits {
    /// Most bytes (UTF-8) of one name: operation, queue, worker, handler, dependency, label or
    /// environment key, working directory.
    public static let maxNameBytes = 4_096
    /// Most entries of one list inside an operation (argv, environment, dependencies, labels).
    public static let maxListEntries = 65_536
    /// Most commands of one operation (`commands:`).
    public static let maxCommandsPerOperation = 1_024
    /// Most operations in one submission.
    public static let maxOperationsPerSubmission = 1_000_000
    /// Largest `maxConcurrent` of a queue (the wire carries it as a 32-bit integer).
    public static let maxConcurrent = Int(Int32.max)
}

extension Limits {
    /// Most handler calls (execution blocks) of one operation (``Work/handlers(_:)``), as for `commands:`.
    public static let maxHandlerCallsPerOperation = 1_024
    /// Most payload bytes of one operation's handler calls, all together (16 MiB).
    public static let maxHandlerCallPayloadBytes = 16 << 20

    /// Why `calls` cannot be one operation's work (too many, payloads too large, a call without a handler
    /// name), with the field it concerns (`handlers`, `handlers[3]`, `handlers[3].payload`), or nil.
    public static func handlerCallsProblem(_ calls: [HandlerCall]) -> (field: String, problem: String)? {
        if calls.isEmpty { return ("handlers", "must hold at least one handler call") }
        if calls.count > maxHandlerCallsPerOperation {
            return ("handlers", "holds \(calls.count) handler calls; at most \(maxHandlerCallsPerOperation) are allowed per operation")
        }
        var bytes = 0
        for (k, call) in calls.enumerated() {
            if call.name.isEmpty { return ("handlers[\(k)]", "must be a handler name") }
            if call.name.utf8.count > maxNameBytes {
                return ("handlers[\(k)]", "handler name has \(call.name.utf8.count) bytes; at most \(maxNameBytes) are allowed")
            }
            bytes += call.payload.count
            if bytes > maxHandlerCallPayloadBytes {
                return ("handlers[\(k)].payload", "brings the operation's handler payloads to \(bytes) bytes; at most "
                    + "\(maxHandlerCallPayloadBytes) (16 MiB) are allowed in all: pass a file's path instead of its contents")
            }
        }
        return nil
    }
}
