import Foundation
import OPQSpawn
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The lease watchdog process (SEMANTICS §7, leases): it kills the groups it is told about the moment
/// the lease it was given ends, and when its worker goes away.
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

    @Test("a group under the lease is killed with SIGKILL when the lease ends, not before")
    func killsWhenTheLeaseEnds() throws {
        let watchdog = try LeaseWatchdog()
        let pid = try sleeper()
        let renewedAt = Date()
        #expect(watchdog.renew(remaining: 0.3))
        #expect(watchdog.add(group: pid))
        #expect(signalThatEnded(pid) == SIGKILL)
        #expect(Date().timeIntervalSince(renewedAt) >= 0.29, "killed before the lease ended")
    }

    @Test("a renewed lease keeps the group alive; a group added without a lease is killed at once")
    func renewAndNoLease() throws {
        let watchdog = try LeaseWatchdog()
        let kept = try sleeper()
        #expect(watchdog.renew(remaining: 60))
        #expect(watchdog.add(group: kept))
        let unleased = try LeaseWatchdog()
        let killed = try sleeper()
        #expect(unleased.add(group: killed))
        #expect(signalThatEnded(killed) == SIGKILL)
        #expect(kill(kept, 0) == 0, "the leased group still runs")
        // A removed group is not killed when the lease ends; one added after it ended is, at once.
        #expect(watchdog.remove(group: kept))
        #expect(watchdog.renew(remaining: 0))
        let late = try sleeper()
        #expect(watchdog.add(group: late))
        #expect(signalThatEnded(late) == SIGKILL)
        kill(kept, SIGTERM)
        #expect(signalThatEnded(kept) == SIGTERM, "a removed group was left alone")
    }

    @Test("when the worker lets the watchdog go (exit, crash), it kills what it still knows and exits")
    func killsWhenTheWorkerGoes() throws {
        var watchdog: LeaseWatchdog? = try LeaseWatchdog()
        let watchdogPid = watchdog!.pid
        let pid = try sleeper()
        #expect(watchdog!.renew(remaining: 60))
        #expect(watchdog!.add(group: pid))
        watchdog = nil  // closes the worker's end and reaps the watchdog
        #expect(signalThatEnded(pid) == SIGKILL)
        #expect(kill(watchdogPid, 0) != 0, "the watchdog is gone")
    }
}
