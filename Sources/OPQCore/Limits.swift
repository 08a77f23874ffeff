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

    /// Why `seconds`, given as `name` (a flag such as `--kill-grace`, a field, a `file:line`), is refused,
    /// or nil when it is a valid duration.
    public static func durationProblem(_ seconds: Double, name: String, positive: Bool = false) -> String? {
        isValidDuration(seconds, positive: positive) ? nil : "\(name) must be \(durationRange(positive: positive)), not \(seconds)"
    }

    /// Why the count `value`, given as `name`, is refused (outside `range`), or nil when it is in range.
    public static func countProblem(_ value: Int, name: String, range: ClosedRange<Int>) -> String? {
        range.contains(value) ? nil : "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(value)"
    }

    /// How a duration range reads in an error message.
    public static func durationRange(positive: Bool = false) -> String {
        positive ? "a number of seconds greater than 0 and at most \(Int(maxSeconds))"
                 : "a number of seconds from 0 to \(Int(maxSeconds))"
    }
}
