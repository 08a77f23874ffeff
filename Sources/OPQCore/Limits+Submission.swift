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
