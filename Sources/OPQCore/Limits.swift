/// The documented range of every number opq accepts from outside (job files, flags, the wire). Each edge
/// checks its input against these where it enters and names the flag, `file:line` or wire field in its
/// error, so a value one edge accepts is never refused later by another (SEMANTICS §9).
///
/// `OPQWire.WireLimits` repeats these for the wire; job files and the executables' flags use them directly.
public enum Limits {
    /// Longest duration in seconds (timeouts, grace periods, heartbeat intervals): about 100 years.
    /// Durations are finite, not NaN, and at least zero (timeouts: greater than zero).
    public static let maxSeconds: Double = 3.2e9
    /// Most worker slots.
    public static let maxSlots = 1 << 20
    /// Highest attempt number.
    public static let maxAttempt = 1 << 24
    /// Most retries of one operation.
    public static let maxRetries = 1 << 16
    /// Most missed heartbeat intervals before a peer is declared lost.
    public static let maxLiveness = 1_000

    /// True when `seconds` is a duration opq accepts: finite, ≥ 0 (> 0 with `positive`), ≤ ``maxSeconds``.
    public static func isValidDuration(_ seconds: Double, positive: Bool = false) -> Bool {
        seconds.isFinite && (positive ? seconds > 0 : seconds >= 0) && seconds <= maxSeconds
    }

    /// How a duration range reads in an error message.
    public static func durationRange(positive: Bool = false) -> String {
        positive ? "a number of seconds greater than 0 and at most \(Int(maxSeconds))"
                 : "a number of seconds from 0 to \(Int(maxSeconds))"
    }
}
