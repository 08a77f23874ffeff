/// Busy-polling before a blocking wait (`opq-coordinator --spin`): when a loop expects a message within
/// microseconds — it just handed in-process work to another thread of this process, which answers that
/// fast — it polls without waiting (`zmq_poll` with timeout 0), again and again, for up to ``limit``
/// before it sleeps in the poll.
///
/// Why: a thread asleep in `zmq_poll` starts running again tens of microseconds after its message arrived
/// (the futex wake-up, and on a virtual machine whose idle cores halt, the core's wake-up: ≈ 50–60 µs on
/// the machines opq is measured on); one still polling sees it at once. A chain of in-process operations
/// is made of such round trips, two wake-ups per link. Spinning costs a core for up to ``limit``, so it
/// is only worth it where the answer is near: the caller says when it expects one, and the spin backs off
/// after spins that found nothing — after the k-th miss in a row the next 2^(k-1) chances are skipped
/// (at most ``maximumBackoff``), and one spin that finds something starts over.
///
/// A value type the loop owns; the decisions are pure (``shouldSpin(expecting:)``, ``spun(found:)``,
/// ``skipped(expecting:)``), the polling is ``Poller/poll(timeout:spinning:expecting:)``.
public struct SpinningWait: Sendable, Equatable {
    /// How long one wait spins at most; zero = never.
    public let limit: Duration
    /// Chances still to skip after the last miss.
    public private(set) var skip = 0
    /// Chances skipped after the last miss (doubles per miss in a row, up to ``maximumBackoff``).
    public private(set) var backoff = 0
    /// Spins that found a message, and spins that did not (for the curious: logs, tests).
    public private(set) var hits = 0, misses = 0

    /// The longest ``limit`` accepted, in microseconds: beyond a millisecond a loop would rather sleep.
    public static let maximumMicroseconds = 1_000
    /// ``maximumMicroseconds`` as a duration.
    public static let maximum: Duration = .microseconds(maximumMicroseconds)
    /// The most chances skipped after misses in a row.
    public static let maximumBackoff = 64
    /// What `opq-coordinator` spins in a one-process cluster unless told otherwise, in microseconds: about
    /// one round trip between two threads of the cluster with both awake (≈ 20–45 µs per in-process link
    /// measured).
    public static let oneProcessDefaultMicroseconds = 50
    /// ``oneProcessDefaultMicroseconds`` as a duration.
    public static let oneProcessDefault: Duration = .microseconds(oneProcessDefaultMicroseconds)

    /// A spin of at most `limit` (clamped to 0…``maximum``).
    public init(limit: Duration) {
        self.limit = min(max(limit, .zero), Self.maximum)
    }

    /// No spinning at all.
    public static let off = SpinningWait(limit: .zero)

    /// What is wrong with `microseconds` as a ``limit`` given on a command line; nil if nothing is.
    public static func problem(microseconds: Int) -> String? {
        (0...maximumMicroseconds).contains(microseconds)
            ? nil : "the spin must be from 0 to \(maximumMicroseconds) microseconds, not \(microseconds)"
    }

    /// Whether the next wait spins: the loop expects a message soon, spinning is on, and no miss is being
    /// backed off from.
    public func shouldSpin(expecting: Bool) -> Bool { expecting && limit > .zero && skip == 0 }

    /// Records a spin: one that `found` a message starts the backoff over; one that did not doubles it.
    public mutating func spun(found: Bool) {
        if found {
            hits &+= 1
            backoff = 0
        } else {
            misses &+= 1
            backoff = min(max(1, backoff * 2), Self.maximumBackoff)
            skip = backoff
        }
    }

    /// Records a wait that did not spin: if the loop `expecting` a message was held back by a miss, one
    /// chance fewer is left to skip.
    public mutating func skipped(expecting: Bool) {
        if expecting && skip > 0 { skip -= 1 }
    }
}

extension Poller {
    /// As ``poll(timeout:)``, but when `spin` says so (``SpinningWait/shouldSpin(expecting:)``) polls
    /// without waiting until an item is ready or `spin.limit` has passed, and only then waits for the
    /// rest of `milliseconds`; records what the spin found in `spin`. A `milliseconds` of 0 never spins.
    @discardableResult
    public mutating func poll(timeout milliseconds: Int, spinning spin: inout SpinningWait, expecting: Bool) throws(ZMQError) -> Int {
        guard milliseconds != 0, spin.shouldSpin(expecting: expecting) else {
            if milliseconds != 0 { spin.skipped(expecting: expecting) }
            return try poll(timeout: milliseconds)
        }
        let end = ContinuousClock.now + spin.limit
        repeat {
            let ready = try poll(timeout: 0)
            if ready > 0 {
                spin.spun(found: true)
                return ready
            }
        } while ContinuousClock.now < end
        spin.spun(found: false)
        return try poll(timeout: milliseconds)
    }
}
