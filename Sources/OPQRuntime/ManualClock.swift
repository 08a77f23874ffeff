import Foundation

/// A clock that moves only when told to: the test clock for code that takes a ``SecondsClock``.
///
/// Thread-safe, so a test may advance it while the code under test reads it on another thread.
// @unchecked Sendable: `current` is read and advanced only under `lock`.
public final class ManualClock: SecondsClock, @unchecked Sendable {
    // @unchecked: `current` is read and written only under `lock`.
    private let lock = NSLock()
    private var current: Double

    /// A clock reading `start` seconds.
    public init(start: Double = 0) { current = start }

    public func now() -> Double { lock.withLock { current } }

    /// Moves the clock forward by `seconds` (which must not be negative: a clock never runs backwards).
    public func advance(by seconds: Double) {
        precondition(seconds >= 0, "ManualClock.advance(by: \(seconds)): a clock never runs backwards")
        lock.withLock { current += seconds }
    }

    /// Sets the clock to `seconds`, which must not be before the current reading.
    public func set(to seconds: Double) {
        lock.withLock {
            precondition(seconds >= current, "ManualClock.set(to: \(seconds)): before the current reading \(current)")
            current = seconds
        }
    }
}
