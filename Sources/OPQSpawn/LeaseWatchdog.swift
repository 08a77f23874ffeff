import COPQSpawn
#if canImport(Glibc)
import Glibc
#endif

/// The worker's lease watchdog (`opq_lease` in `COPQSpawn`): a small process that kills every process
/// group of the worker's commands with SIGKILL the moment the worker's lease ends — even while the worker
/// itself is stopped (SIGSTOP, a debugger) and cannot (SEMANTICS §7, leases). It also kills them when the
/// worker dies.
///
/// Thread-safe: each call is one datagram on a socket pair (checked `Sendable`: its only state is the
/// immutable descriptor and pid).
public final class LeaseWatchdog: Sendable {
    private let watchdog: opq_lease_watchdog

    /// Starts the watchdog process, with no lease yet (a group added before ``renew(remaining:)`` is
    /// killed at once). Fails with the `errno` of `socketpair` or `fork`.
    public init() throws(SpawnFailure) {
        var watchdog = opq_lease_watchdog(fd: -1, pid: 0)
        let result = opq_lease_watchdog_start(&watchdog)
        guard result == 0 else { throw SpawnFailure(errno: -result) }
        self.watchdog = watchdog
    }

    deinit {
        var watchdog = watchdog
        opq_lease_watchdog_stop(&watchdog)
    }

    /// The lease now ends `remaining` seconds from now (≤ 0: it is over and every group is killed).
    /// Returns false if the watchdog is gone (it was killed): the lease is then not enforced.
    @discardableResult
    public func renew(remaining: Double) -> Bool {
        let nanoseconds = Int64(max(-1e18, min(1e18, remaining * 1e9)))
        return withUnsafePointer(to: watchdog) { opq_lease_watchdog_renew($0, nanoseconds) } == 0
    }

    /// Process group `group` runs under the lease. Returns false if the watchdog is gone.
    @discardableResult
    public func add(group: pid_t) -> Bool {
        withUnsafePointer(to: watchdog) { opq_lease_watchdog_add($0, group) } == 0
    }

    /// Process group `group` was reaped. Returns false if the watchdog is gone.
    @discardableResult
    public func remove(group: pid_t) -> Bool {
        withUnsafePointer(to: watchdog) { opq_lease_watchdog_remove($0, group) } == 0
    }

    /// The watchdog's pid (tests check that it goes away with the worker).
    public var pid: pid_t { watchdog.pid }
}
