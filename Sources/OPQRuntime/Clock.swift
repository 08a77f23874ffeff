#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where opq reads the time: seconds as a `Double`, on a clock that never jumps backwards.
///
/// Code that schedules (heartbeats, leases, deadlines, retries) takes a `SecondsClock` rather than reading
/// the system's time itself, so a test can hand it a ``ManualClock`` and move time by hand.
public protocol SecondsClock: Sendable {
    /// Now, in seconds. Successive calls never decrease.
    func now() -> Double
}

/// The system clock opq runs on: Unix seconds read once per process, advanced by `CLOCK_MONOTONIC`.
///
/// Timestamps read as Unix time (journal records, `opq show`), yet never jump when the wall clock is set,
/// so heartbeats and timeouts stay correct across clock changes. Every instance shares the anchor, so
/// values from two instances in one process compare.
public struct MonotonicClock: SecondsClock {
    /// Wall-clock and monotonic seconds read together at first use.
    private static let anchor = (wall: read(CLOCK_REALTIME), monotonic: read(CLOCK_MONOTONIC))

    public init() {}

    /// Now, in Unix seconds (monotonic).
    public func now() -> Double { Self.now() }

    /// Now, in Unix seconds (monotonic), without an instance.
    public static func now() -> Double { anchor.wall + (read(CLOCK_MONOTONIC) - anchor.monotonic) }

    /// Raw `CLOCK_MONOTONIC` nanoseconds, for measuring short intervals at full resolution (benchmarks).
    public static func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    private static func read(_ clock: clockid_t) -> Double {
        var time = timespec()
        clock_gettime(clock, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
