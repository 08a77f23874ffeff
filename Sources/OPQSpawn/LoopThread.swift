import COPQSpawn
#if canImport(Glibc)
import Glibc
#endif

/// What opq's event loops ask of the scheduler for their own thread: short time slices.
///
/// A loop that runs commands (the coordinator's, with the workers it hosts; a worker's socket thread)
/// does a few tens of microseconds of work whenever a command ends, and the next command starts only
/// after it. Its wake-ups come while the commands it started keep the cores busy, and with the default
/// slice (it grows with the number of cores: 1.4 ms on a 2-core machine) the woken loop waits in the run queue
/// until a command's slice ends (≈ 110 µs from the wake-up that ends a `vfork` to its running again,
/// measured here). With a short slice (Linux ≥ 6.12, EEVDF) its deadline comes first, so while it is
/// eligible its wake-up preempts the command: the loop's average wake-up → running latency went from
/// 97–110 to 71–89 µs in `opq map --local 2 -- true`, at the same CPU (the rate: 0.99–1.03×, this VM's noise).
///
/// The slice is the thread's alone: with reset-on-fork, the commands it spawns get the default slice
/// back. A thread with a real-time policy or a negative niceness is left as it is (reset-on-fork would
/// take the negative niceness from its commands). Older kernels accept the request and ignore the slice.
public enum LoopThread {
    /// The slice asked for: the shortest the kernel takes (0.1 ms).
    public static let sliceNanoseconds: UInt64 = 100_000

    /// What ``preferShortSlices()`` did.
    public enum Outcome: Sendable, Equatable {
        /// The calling thread has the short slice now.
        case applied
        /// Left alone: a real-time policy, or a negative niceness.
        case leftAlone
        /// The kernel refused (the `errno`, e.g. `ENOSYS` for a kernel without `sched_setattr`).
        case refused(errno: Int32)
    }

    /// Asks for ``sliceNanoseconds`` slices for the calling thread (see the type's description).
    @discardableResult
    public static func preferShortSlices() -> Outcome {
        let result = opq_thread_prefer_short_slices(sliceNanoseconds)
        return result == 0 ? .applied : result > 0 ? .leftAlone : .refused(errno: -result)
    }

    /// The slice a thread has, in nanoseconds, from the text of its `/proc/…/sched` file (its `se.slice`
    /// line); nil where the kernel shows none (before Linux 6.6, or without scheduler debugging).
    public static func slice(inSchedText text: String) -> UInt64? {
        text.split(separator: "\n").first { $0.hasPrefix("se.slice") }
            .flatMap { $0.split(separator: ":").last }
            .flatMap { UInt64(String($0.filter { $0 != " " && $0 != "\t" })) }
    }
}
