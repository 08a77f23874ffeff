import Foundation
import OPQCore
import OPQSpawn
import Testing
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#endif

/// The lease watchdog process (SEMANTICS §7, leases): it kills the groups listed in the table it shares
/// with the worker the moment the lease ends, and when its worker goes away.
@Suite("Lease watchdog", .serialized)
struct LeaseWatchdogTests {
    /// A `sleep 30` leading its own process group; its pid is the group id.
    func sleeper() throws -> pid_t {
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        switch ChildSpawn.spawn("/bin/sleep", arguments: ["30"], environment: ChildSpawn.environment(), stdout: null, stderr: null) {
        case .success(let pid): return pid
        case .failure(let failure): throw failure
        }
    }

    /// Waits for `pid` (a child of this process) and returns the signal that ended it (0 = it exited).
    func signalThatEnded(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f
    }

    /// Waits for `pid` to end without reaping it, unlists it, then reaps it (the worker's order: a group's
    /// id is never reused while it is listed) and returns the signal that ended it.
    func signalThatEnded(_ pid: pid_t, unlisting listing: LeaseWatchdog.Listing, from watchdog: LeaseWatchdog) -> Int32 {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        watchdog.remove(listing)
        return signalThatEnded(pid)
    }

    @Test("a child spawned into a reserved entry lists its own group before it execs: killed at the lease's end with no confirm")
    func aReservedEntryIsFilledByTheChild() throws {
        let watchdog = try LeaseWatchdog()
        #expect(watchdog.renew(remaining: 0.3))
        let reserved = try #require(watchdog.reserve())
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        // The worker would confirm the entry after the spawn; a worker killed before that must not matter.
        let spawned = ChildSpawn.spawn("/bin/sleep", argv: CStringArray(["sleep", "30"]), environment: ChildSpawn.environment(),
                                       stdout: null, stderr: null, leaseEntry: watchdog.slot(of: reserved))
        let pid = try spawned.get()
        #expect(watchdog.slot(of: reserved).pointee == pid, "the child did not write its group id")
        #expect(signalThatEnded(pid, unlisting: reserved, from: watchdog) == SIGKILL)
        // A spawn that fails leaves the entry reserved (never a group id the reap frees), and it is unlisted.
        let failing = try #require(watchdog.reserve())
        let missing = ChildSpawn.spawn("/nonexistent/program", argv: CStringArray(["x"]), environment: ChildSpawn.environment(),
                                       stdout: null, stderr: null, leaseEntry: watchdog.slot(of: failing))
        #expect(throws: SpawnFailure.self) { try missing.get() }
        #expect(watchdog.slot(of: failing).pointee == 1)
        watchdog.remove(failing)
    }

    @Test("a group under the lease is killed with SIGKILL when the lease ends, not before")
    func killsWhenTheLeaseEnds() throws {
        let watchdog = try LeaseWatchdog()
        let pid = try sleeper()
        let renewedAt = Date()
        #expect(watchdog.renew(remaining: 0.3))
        let listing = try #require(watchdog.add(group: pid))
        #expect(signalThatEnded(pid, unlisting: listing, from: watchdog) == SIGKILL)
        #expect(Date().timeIntervalSince(renewedAt) >= 0.29, "killed before the lease ended")
    }

    /// The watchdog sleeps until the end it last read: an extension (a store, no wake-up) is read when it
    /// wakes at the old end; an earlier end wakes it.
    @Test("an extended lease kills at its new end, not the old one; a shortened one at its new end")
    func killsAtTheEndAsMovedLast() throws {
        let watchdog = try LeaseWatchdog()
        let extended = try sleeper()
        let start = Date()
        #expect(watchdog.renew(remaining: 0.2))
        let extendedListing = try #require(watchdog.add(group: extended))
        #expect(watchdog.renew(remaining: 0.8))
        #expect(signalThatEnded(extended, unlisting: extendedListing, from: watchdog) == SIGKILL)
        #expect(Date().timeIntervalSince(start) >= 0.79, "killed at the lease's old end")

        let shortened = try sleeper()
        #expect(watchdog.renew(remaining: 60))
        let renewed = Date()
        let shortenedListing = try #require(watchdog.add(group: shortened))
        #expect(watchdog.renew(remaining: 0.2))
        #expect(signalThatEnded(shortened, unlisting: shortenedListing, from: watchdog) == SIGKILL)
        #expect(Date().timeIntervalSince(renewed) < 30, "the watchdog slept on to the lease's old end")
    }

    @Test("a renewed lease keeps the group alive; a group added without a lease is killed at once")
    func renewAndNoLease() throws {
        let watchdog = try LeaseWatchdog()
        let kept = try sleeper()
        #expect(watchdog.renew(remaining: 60))
        let listing = try #require(watchdog.add(group: kept))
        let unleased = try LeaseWatchdog()
        let killed = try sleeper()
        let killedListing = try #require(unleased.add(group: killed))
        #expect(signalThatEnded(killed, unlisting: killedListing, from: unleased) == SIGKILL)
        #expect(kill(kept, 0) == 0, "the leased group still runs")
        // A removed group is not killed when the lease ends; one added after it ended is, at once.
        watchdog.remove(listing)
        #expect(watchdog.renew(remaining: 0))
        let late = try sleeper()
        let lateListing = try #require(watchdog.add(group: late))
        #expect(signalThatEnded(late, unlisting: lateListing, from: watchdog) == SIGKILL)
        kill(kept, SIGTERM)
        #expect(signalThatEnded(kept) == SIGTERM, "a removed group was left alone")
    }

    @Test("when the worker lets the watchdog go (exit, crash), it kills what it still knows and exits")
    func killsWhenTheWorkerGoes() throws {
        var watchdog: LeaseWatchdog? = try LeaseWatchdog()
        let watchdogPid = watchdog!.pid
        let pid = try sleeper()
        #expect(watchdog!.renew(remaining: 60))
        #expect(watchdog!.add(group: pid) != nil)
        watchdog = nil  // closes the worker's end and reaps the watchdog
        #expect(signalThatEnded(pid) == SIGKILL)
        #expect(kill(watchdogPid, 0) != 0, "the watchdog is gone")
    }

    @Test("a full table lists no more: the group is killed at once, never left untracked; a freed entry is reused")
    func aFullTableKillsWhatItCannotList() throws {
        let watchdog = try LeaseWatchdog(capacity: 2)
        #expect(watchdog.renew(remaining: 60))
        let first = try sleeper()
        let second = try sleeper()
        let firstListing = try #require(watchdog.add(group: first))
        let secondListing = try #require(watchdog.add(group: second))
        let third = try sleeper()
        #expect(watchdog.add(group: third) == nil, "listed beyond the table's capacity")
        #expect(signalThatEnded(third) == SIGKILL)
        #expect(kill(first, 0) == 0 && kill(second, 0) == 0, "the listed groups still run")

        // Unlisted, then reaped (the order the worker keeps): the freed entry takes the next group, and
        // the lease's end kills only what is listed.
        watchdog.remove(firstListing)
        kill(first, SIGTERM)
        #expect(signalThatEnded(first) == SIGTERM)
        let fourth = try sleeper()
        let fourthListing = try #require(watchdog.add(group: fourth))
        #expect(fourthListing == firstListing, "the freed entry was not reused")
        #expect(watchdog.renew(remaining: 0))
        #expect(signalThatEnded(second, unlisting: secondListing, from: watchdog) == SIGKILL)
        #expect(signalThatEnded(fourth, unlisting: fourthListing, from: watchdog) == SIGKILL)
    }

    /// A group is unlisted before each reap that may take its last member (``ChildProcessGroup``); when
    /// members are left after it (a background job outliving its leader), it is listed again.
    @Test("a group whose leader exited is listed again while members are left: the lease's end kills them")
    func aGroupOutlivingItsLeaderIsListedAgain() throws {
        let watchdog = try LeaseWatchdog()
        #expect(watchdog.renew(remaining: 2))
        let start = Date()
        let ended = DispatchSemaphore(value: 0)
        let outcome = OutcomeBox()
        // The background member ignores the SIGTERM the worker sends when the leader exits, and the
        // worker's SIGKILL comes only after the grace period (60 s): only the watchdog ends it sooner.
        let group = try ChildProcessGroup.spawn(.shell("trap '' TERM; sleep 30 & exit 0"), niceness: 0, killGracePeriod: 60,
                                                lease: watchdog) { result in
            outcome.lock.withLock { outcome.value = result }
            ended.signal()
        }
        defer { kill(-group.pid, SIGKILL) }
        #expect(ended.wait(timeout: .now() + 25) == .success, "the background member outlived the lease")
        #expect(Date().timeIntervalSince(start) >= 1.9, "killed before the lease ended")
        #expect(outcome.lock.withLock { outcome.value?.termination } == .exited(0), "the leader did not exit before the lease ended")
    }

    // @unchecked Sendable: `value` is guarded by `lock`.
    final class OutcomeBox: @unchecked Sendable {
        let lock = NSLock()
        var value: ChildProcessGroup.Outcome?
    }
}
