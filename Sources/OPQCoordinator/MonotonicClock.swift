#if canImport(Glibc)
import Glibc
#endif

/// The coordinator's clock: wall-clock seconds at start, advanced by the monotonic clock, so timestamps
/// read as Unix time yet never jump backwards (heartbeats and timeouts stay correct across clock changes).
struct MonotonicClock {
    private let wallAtStart: Double
    private let monotonicAtStart: Double

    init() {
        wallAtStart = MonotonicClock.read(CLOCK_REALTIME)
        monotonicAtStart = MonotonicClock.read(CLOCK_MONOTONIC)
    }

    /// Now, in Unix seconds.
    func now() -> Double { wallAtStart + (MonotonicClock.read(CLOCK_MONOTONIC) - monotonicAtStart) }

    private static func read(_ clock: clockid_t) -> Double {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
