import Foundation
import OPQCore

/// When a blocking wait of the client library gives up, made from a caller's timeout in seconds — any
/// `Double`, so no timeout a caller passes can crash the wait.
///
/// Foundation's `NSCondition.wait(until:)` converts its date to nanoseconds in an `Int64` and traps
/// beyond about the year 2262, so `waitUntilFinished(timeout: .infinity)` would abort the program. Here a
/// timeout longer than opq's longest duration (``OPQCore/Limits/maxSeconds``, about 100 years) or
/// infinite means "no limit"; zero, a negative timeout or NaN means "do not wait".
struct WaitDeadline: Sendable {
    /// The moment the wait ends; nil = it waits as long as it takes.
    let date: Date?

    /// The deadline `seconds` from now (nil = no limit).
    init(seconds: Double?) {
        guard let seconds else {
            date = nil
            return
        }
        if seconds.isNaN || seconds <= 0 {
            date = Date()
        } else if seconds > Limits.maxSeconds {
            date = nil
        } else {
            date = Date(timeIntervalSinceNow: seconds)
        }
    }

    /// A timeout to pass on to the coordinator (which refuses durations beyond ``OPQCore/Limits/maxSeconds``):
    /// nil when `seconds` means "no limit", else `seconds` unchanged (the coordinator refuses a
    /// negative one or NaN with a clear error).
    static func limit(_ seconds: Double?) -> Double? {
        guard let seconds, !(seconds > Limits.maxSeconds) else { return nil }
        return seconds
    }
}

extension NSCondition {
    /// Waits (lock held) until signalled or `deadline` passes; returns false once it has passed.
    func wait(until deadline: WaitDeadline) -> Bool {
        guard let date = deadline.date else {
            wait()
            return true
        }
        return wait(until: date)
    }
}
