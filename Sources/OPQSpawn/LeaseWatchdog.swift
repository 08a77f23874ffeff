import COPQSpawn
#if canImport(Glibc)
import Glibc
#endif

/// The worker's lease watchdog (`opq_lease` in `COPQSpawn`): a small process that kills every process
/// group of the worker's commands with SIGKILL the moment the worker's lease ends — even while the worker
/// itself is stopped (SIGSTOP, a debugger) and cannot (SEMANTICS §7, leases). It also kills them when the
/// worker dies.
///
/// The worker and the watchdog share a table of the listed groups and the lease's end: listing a group,
/// unlisting it and extending the lease are atomic stores that wake nobody (no message per command).
///
/// Thread-safe: the table is written with atomic operations and its free entries are guarded by a mutex.
// @unchecked Sendable: the only stored state is the immutable C handle (descriptor, pid and two pointers
// the C side synchronizes itself).
public final class LeaseWatchdog: @unchecked Sendable {
    /// A group's entry in the table, from ``add(group:)``; give it to ``remove(_:)``.
    public struct Listing: Sendable, Hashable {
        /// The table entry.
        let entry: Int32
    }

    private let watchdog: opq_lease_watchdog

    /// Starts the watchdog process, with no lease yet (a group added before ``renew(remaining:)`` is
    /// killed at once). `capacity`: how many groups can be listed at once (nil: more than a machine can
    /// hold processes, so the table never fills; tests give a small one). Fails with the `errno` of
    /// `mmap`, `socketpair` or `fork`.
    public init(capacity: Int32? = nil) throws(SpawnFailure) {
        var watchdog = opq_lease_watchdog(fd: -1, pid: 0, table: nil, free: nil)
        let result = opq_lease_watchdog_start(&watchdog, capacity ?? 0)
        guard result == 0 else { throw SpawnFailure(errno: -result) }
        self.watchdog = watchdog
    }

    deinit {
        var watchdog = watchdog
        opq_lease_watchdog_stop(&watchdog)
    }

    /// The lease now ends `remaining` seconds from now (≤ 0: it is over and every group is killed).
    /// Returns false if the watchdog had to be woken and is gone (it was killed): the lease is then not
    /// enforced.
    @discardableResult
    public func renew(remaining: Double) -> Bool {
        let nanoseconds = Int64(max(-1e18, min(1e18, remaining * 1e9)))
        return withUnsafePointer(to: watchdog) { opq_lease_watchdog_renew($0, nanoseconds) } == 0
    }

    /// Lists process group `group` (led by a child of this process, not reaped yet) under the lease. With
    /// no lease now it is killed at once (and listed). Nil when the table is full: the group was killed
    /// at once, never left running untracked.
    public func add(group: pid_t) -> Listing? {
        let entry = withUnsafePointer(to: watchdog) { opq_lease_watchdog_add($0, group) }
        return entry >= 0 ? Listing(entry: entry) : nil
    }

    /// Reserves an entry for a group about to be spawned: give ``slot(of:)`` to the spawn (the child writes
    /// its group id there before it execs), then ``confirm(_:group:)``; ``remove(_:)`` if the spawn failed.
    /// Nil when the table is full.
    public func reserve() -> Listing? {
        let entry = withUnsafePointer(to: watchdog) { opq_lease_watchdog_reserve($0) }
        return entry >= 0 ? Listing(entry: entry) : nil
    }

    /// Where the spawned child of a ``reserve()``d entry writes its group id (memory the watchdog shares).
    public func slot(of listing: Listing) -> UnsafeMutablePointer<Int32> {
        withUnsafePointer(to: watchdog) { opq_lease_watchdog_slot($0, listing.entry) }
    }

    /// After the spawn into a reserved entry: it lists `group`; with no lease left the group is killed at
    /// once (as ``add(group:)`` does).
    public func confirm(_ listing: Listing, group: pid_t) {
        withUnsafePointer(to: watchdog) { opq_lease_watchdog_confirm($0, listing.entry, group) }
    }

    /// Unlists a group: from the return on, the watchdog does not signal it. Call it before reaping the
    /// group's last member (its id may be reused from then on).
    public func remove(_ listing: Listing) {
        withUnsafePointer(to: watchdog) { opq_lease_watchdog_remove($0, listing.entry) }
    }

    /// The watchdog's pid (tests check that it goes away with the worker).
    public var pid: pid_t { watchdog.pid }
}
