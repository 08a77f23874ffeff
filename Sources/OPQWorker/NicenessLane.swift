import Foundation
import OPQCore
import OPQSpawn
#if canImport(Glibc)
import Glibc
#endif

extension OPQCore.QualityOfService {
    /// The CPU niceness a worker gives this QoS's processes: `userInteractive`, `userInitiated` and
    /// `default` 0 (the worker's own), `utility` 10, `background` 19.
    ///
    /// Linux derives a process's best-effort I/O priority from its niceness when no I/O class was set,
    /// so `utility` and `background` also get lower I/O priority (levels 6 and 7).
    public var niceness: Int32 {
        switch self {
        case .userInteractive, .userInitiated, .default: 0
        case .utility: 10
        case .background: 19
        }
    }
}

/// A thread running at a fixed niceness that spawns child processes, so they start at that niceness.
///
/// On Linux, niceness belongs to a thread, and a process spawned by a thread inherits that thread's
/// niceness from its first instruction. Spawning from a niced thread is therefore race-free, unlike
/// `setpriority` on the child after the spawn (by then it may already have started children of its own)
/// and cheaper than a `nice` wrapper process. There is one lane per niceness (the worker's own included),
/// created on first use and kept for the life of the process: niceness cannot be lowered back, and a
/// child's parent-death signal (PR_SET_PDEATHSIG, set by `opq_spawn`) fires when the thread that spawned it ends, so
/// every spawn must come from a thread that lives as long as the worker.
// @unchecked Sendable: `jobs` is guarded by `condition`; the static `lanes` by `lanesLock`. The lane's thread
// owns nothing else: each job carries its own result back (``Box``).
final class NicenessLane: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    private static let lanesLock = NSLock()
    nonisolated(unsafe) private static var lanes: [Int32: NicenessLane] = [:]

    /// Runs `body` on a long-lived thread whose niceness is at least `niceness` and returns its result.
    static func perform<T: Sendable>(
        niceness: Int32, _ body: @escaping @Sendable () throws(SystemError) -> T
    ) throws(SystemError) -> T {
        // A child's parent-death signal follows the thread that spawned it, so spawns must come from
        // threads that live as long as the worker: the calling thread if it is one (the socket thread,
        // the child monitor) at the right niceness — no hop —, else a lane, also at the worker's own niceness.
        let current = currentNiceness()
        if ChildSpawn.isThreadLongLived, niceness <= current { return try body() }
        return try lane(for: max(niceness, current)).run(body)
    }

    /// The lane for `niceness`, created on first use.
    private static func lane(for niceness: Int32) throws(SystemError) -> NicenessLane {
        lanesLock.lock()
        defer { lanesLock.unlock() }
        if let existing = lanes[niceness] { return existing }
        let lane = try NicenessLane(niceness: niceness)
        lanes[niceness] = lane
        return lane
    }

    /// The calling thread's niceness.
    private static func currentNiceness() -> Int32 {
        // getpriority may legitimately return -1, so errno is cleared first; it cannot fail for `who` = 0.
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        return errno == 0 ? value : 0
    }

    private init(niceness: Int32) throws(SystemError) {
        let ready = DispatchSemaphore(value: 0)
        let setup = Box<Void>()
        let thread = Thread { [self] in
            // PRIO_PROCESS with who = 0 sets the calling thread's niceness on Linux.
            let outcome = Result { () throws(SystemError) in
                _ = try SystemCall.check("setpriority", "niceness \(niceness)") { setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness) }
            }
            setup.value = outcome
            ready.signal()
            if case .success = outcome { serve() }
        }
        thread.name = "opq-spawn-nice-\(niceness)"
        thread.stackSize = 256 * 1024
        thread.start()
        ready.wait()
        try setup.value!.get()
    }

    /// A result handed from one thread to another.
    // @unchecked Sendable: `value` is written once by the giving thread before it signals a semaphore, and
    // read by the taking thread only after waiting on it (the semaphore orders the two).
    private final class Box<T>: @unchecked Sendable { var value: Result<T, SystemError>? }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws(SystemError) -> T) throws(SystemError) -> T {
        let done = DispatchSemaphore(value: 0)
        let box = Box<T>()
        condition.withLock {
            jobs.append {
                box.value = Result { () throws(SystemError) -> T in try body() }
                done.signal()
            }
            condition.signal()
        }
        done.wait()
        return try box.value!.get()
    }

    private func serve() {
        while true {
            let job: @Sendable () -> Void = condition.withLock {
                while jobs.isEmpty { condition.wait() }
                return jobs.removeFirst()
            }
            job()
        }
    }
}
