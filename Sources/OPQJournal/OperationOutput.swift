/// What the last report of an operation said beyond its outcome: exit status, duration, the captured
/// output tails, the worker that sent it and when it arrived. Journaled with the report that carried it
/// when ``isWorthJournaling``: the worker and end time alone do not make a report worth journaling, so
/// after a coordinator restart they survive only with an output worth keeping (a silent success then
/// shows no worker, start or end).
public struct OperationOutput: Sendable, Equatable {
    /// A command's exit status.
    public var exitCode: Int32?
    /// The signal that ended a command.
    public var signal: Int32?
    /// Seconds the attempt ran.
    public var duration: Double
    /// The kept tail of standard output.
    public var stdout: [UInt8]
    /// Bytes written to standard output in all.
    public var stdoutTotal: UInt64
    /// The kept tail of standard error.
    public var stderr: [UInt8]
    /// Bytes written to standard error in all.
    public var stderrTotal: UInt64
    /// Why the attempt failed, in words (empty on success).
    public var errorMessage: String
    /// The worker whose report finished the operation (empty: unknown, e.g. a journal from before it was kept).
    public var worker: String
    /// When that report arrived, in Unix seconds on the coordinator's clock (nil: unknown).
    public var endedAt: Double?
    /// A handler's result (empty: none), at most `Limits.maxResultBytes`; kept apart from the output.
    public var result: [UInt8]

    /// When the attempt started: ``endedAt`` less ``duration``.
    public var startedAt: Double? { endedAt.map { $0 - duration } }

    /// Creates an output record.

    public init(exitCode: Int32?, signal: Int32?, duration: Double, stdout: [UInt8], stdoutTotal: UInt64,
                stderr: [UInt8], stderrTotal: UInt64, errorMessage: String, worker: String = "", endedAt: Double? = nil,
                result: [UInt8] = []) {
        self.exitCode = exitCode
        self.signal = signal
        self.duration = duration
        self.stdout = stdout
        self.stdoutTotal = stdoutTotal
        self.stderr = stderr
        self.stderrTotal = stderrTotal
        self.errorMessage = errorMessage
        self.worker = worker
        self.endedAt = endedAt
        self.result = result
    }

    /// The same record without its ``result`` (which the coordinator keeps apart, never evicted with output).
    public var withoutResult: OperationOutput {
        var copy = self
        copy.result = []
        return copy
    }

    /// Nothing worth keeping: no exit status, no output, no result, no message (a handler's plain success).
    public var isBare: Bool {
        exitCode == nil && signal == nil && stdout.isEmpty && stderr.isEmpty && result.isEmpty && errorMessage.isEmpty
    }

    /// Worth journaling: some output or message, or an exit other than a clean 0. (A silent success is
    /// the common case at tens of thousands a second; after a restart it shows its outcome without
    /// an exit status and duration.)
    public var isWorthJournaling: Bool {
        !stdout.isEmpty || !stderr.isEmpty || !result.isEmpty || !errorMessage.isEmpty || signal != nil || (exitCode ?? 0) != 0
    }
}
