#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import OPQRuntime

/// The monotonic wall clock the benchmark times with.
enum Clock {
    /// Nanoseconds on `CLOCK_MONOTONIC` (the runtime's clock, at full resolution).
    static func nanoseconds() -> UInt64 { MonotonicClock.nanoseconds() }

    /// A nanosecond interval in seconds.
    static func seconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e9 }
}

/// A time budget for one shape on one engine. It predicts a run's time from the runs before it
/// (fitting the growth exponent of the last two sizes, 1 with only one) and refuses runs predicted to
/// overrun what is left, so a quadratic case is skipped instead of running for minutes.
struct Budget {
    /// Seconds allowed for the shape, all sizes together.
    let seconds: Double
    /// Seconds used so far.
    private(set) var spent = 0.0
    /// Sizes run so far and the time of one run of each.
    private var points: [(size: Int, seconds: Double)] = []

    init(seconds: Double) { self.seconds = seconds }

    /// Records one run of `size` that took `seconds` (of which `charged` counts against the budget,
    /// e.g. several repetitions).
    mutating func record(size: Int, seconds: Double, charged: Double) {
        points.append((size, seconds))
        spent += charged
    }

    /// The predicted seconds of one run at `size`, or nil before any run.
    func predict(_ size: Int) -> Double? {
        guard let last = points.last else { return nil }
        var exponent = 1.0
        if points.count >= 2 {
            let previous = points[points.count - 2]
            if previous.size != last.size, previous.seconds > 0, last.seconds > 0 {
                exponent = log(last.seconds / previous.seconds) / log(Double(last.size) / Double(previous.size))
            }
        }
        exponent = min(max(exponent, 1), 2.5)
        return last.seconds * pow(Double(size) / Double(last.size), exponent)
    }

    /// Whether a run at `size` is predicted to fit in what is left.
    func allows(_ size: Int) -> Bool {
        guard let predicted = predict(size) else { return true }
        return predicted <= seconds - spent
    }

    /// Repetitions for a run at `size` whose one run is predicted to take `predicted` seconds: more for
    /// small sizes (best-of-N hides noise), fewer when runs are long.
    static func repetitions(size: Int, predicted: Double?) -> Int {
        let bySize = size <= 10_000 ? 5 : size <= 100_000 ? 3 : 1
        guard let predicted, predicted > 0 else { return bySize }
        return max(1, min(bySize, Int(2.0 / predicted)))
    }
}
