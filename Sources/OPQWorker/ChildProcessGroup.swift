import OPQSpawn
import Foundation
import OPQCore
#if canImport(Glibc)
import Glibc
#endif

/// A child process that leads its own process group, with its output drained and its group reaped.
///
/// - The leader is spawned by ``spawn(_:niceness:killGracePeriod:onEnd:)`` with `POSIX_SPAWN_SETPGROUP`,
///   so its pid is the group id and everything it starts stays in the group unless it leaves on purpose.
/// - stdout and stderr are pipes drained by a ``ChildMonitor`` (one epoll set over every group's
///   descriptors, serviced by the worker's socket thread, or by a thread of its own without an agent) into
///   64 KiB ``TailBuffer``s. No Dispatch sources: libdispatch's event loop crashed intermittently here when
///   pipe descriptors were closed and reused under load, and a blocked Dispatch pool must not delay output.
/// - The monitor also watches the leader's pidfd and reaps it when it exits, then whatever members of the
///   group are already gone (`waitpid(-pgid, WNOHANG)`). The worker is a child subreaper, so members
///   orphaned by the leader's exit are re-parented to it: when `waitpid` answers `ECHILD`, no member of
///   the group is left, not even a zombie. Only a group with members still running gets a thread of its
///   own, blocked in `waitpid(-pgid)` until `ECHILD` (also every group, on a kernel without pidfds).
/// - When the leader exits, whatever is left of its group gets SIGTERM, then SIGKILL after the grace
///   period: an operation owns its process group, and nothing of it outlives the operation.
/// - With a `lease` watchdog, the group is listed with it from its spawn until it is reaped (the watchdog
///   kills it when the worker's lease ends). It is unlisted *before* every reap that may take its last
///   member (the group's id may be reused once every member is reaped, and the watchdog must never signal a
///   reused id), and listed again when members are left after that reap.
/// - ``terminate()`` sends SIGTERM (and SIGCONT, for stopped members) to the group, then SIGKILL after the
///   grace period if any member is still there.
///
/// `output`, when given, is told every piece read, in order, before it is kept in the tail, once the
/// piece has room in its ``OutputWindow`` (flow control: until then the monitor parks the piece and stops
/// reading this group's pipes, so the command blocks on its writes; see ``ChildMonitor``). `onReaped` is
/// called once, as soon as no member of the group is left (even while output waits for the window);
/// `onEnd` once after it, when both pipes are closed too. All are called on the thread servicing the
/// monitor (or a reaper thread) and must not block.
// @unchecked Sendable: every mutable stored property is guarded by `lock`; the rest is immutable.
final class ChildProcessGroup: @unchecked Sendable {
    /// How the leader ended.
    enum Termination: Hashable, Sendable {
        case exited(Int32)
        case signaled(Int32)
    }

    /// Everything known when the group is gone.
    struct Outcome: Sendable {
        /// How the leader ended (nil only if `waitpid` failed unexpectedly).
        var termination: Termination?
        /// True if we signalled the group before the leader ended (cancel, timeout, hand back).
        var killedByUs: Bool
        var stdout: TailBuffer
        var stderr: TailBuffer
    }

    /// The leader's pid, which is also the process group id.
    let pid: pid_t
    private let killGracePeriod: Double
    private let onEnd: @Sendable (Outcome) -> Void
    private let onReaped: (@Sendable (pid_t) -> Void)?
    private let output: OutputSink?
    private let lease: LeaseWatchdog?
    /// The monitor draining and reaping the group.
    private let monitor: ChildMonitor

    /// Where a group's output is streamed besides its tails: each piece takes room in `window`, then
    /// `post` is told it (on the thread servicing the monitor; it must not block).
    struct OutputSink: Sendable {
        let window: OutputWindow
        let post: @Sendable (OutputChunk.Stream, UnsafeRawBufferPointer) -> Void
    }

    private let lock = NSLock()
    private var termination: Termination?
    private var killedByUs = false
    private var terminating = false
    private var groupReaped = false
    private var streamsOpen = true
    private var ended = false

    /// Guarded by `lock`.
    private var stdoutTail = TailBuffer()
    private var stderrTail = TailBuffer()
    private var reapedTime: Double = 0
    /// The group's entry with the lease watchdog while it is listed.
    private var listing: LeaseWatchdog.Listing?

    /// How long to wait for pipe EOF once the group is reaped (a process that left the group may still
    /// hold the pipes open; its output is not waited for beyond this).
    static let drainGraceAfterExit = 1.0

    private init(
        pid: pid_t, killGracePeriod: Double, output: OutputSink?, lease: LeaseWatchdog?, monitor: ChildMonitor,
        onReaped: (@Sendable (pid_t) -> Void)?, onEnd: @escaping @Sendable (Outcome) -> Void
    ) {
        self.pid = pid
        self.lease = lease
        self.monitor = monitor
        self.onReaped = onReaped
        self.killGracePeriod = killGracePeriod
        self.output = output
        self.onEnd = onEnd
    }

    /// Spawns `command` in a new process group with niceness at least `niceness`, lists the group with
    /// `lease` (if given), and starts draining and reaping it with `monitor` (nil: ``ChildMonitor/shared``,
    /// which has a thread of its own). Throws if the program cannot be started (not
    /// found, not executable, bad directory).
    static func spawn(
        _ command: Command, niceness: Int32, killGracePeriod: Double, output: OutputSink? = nil,
        lease: LeaseWatchdog? = nil, monitor: ChildMonitor? = nil, onReaped: (@Sendable (pid_t) -> Void)? = nil,
        onEnd: @escaping @Sendable (Outcome) -> Void
    ) throws(SystemError) -> ChildProcessGroup {
        try ensureSubreaper()
        let monitor = if let monitor { monitor } else { try ChildMonitor.shared.get() }
        let stdoutPipe = try Pipe.make()
        let stderrPipe: Pipe
        do { stderrPipe = try Pipe.make() } catch { stdoutPipe.closeBoth(); throw error }
        // The group's lease entry is taken first and the child lists itself in it before it execs: a worker
        // killed between the spawn and the listing below would otherwise leave a group nobody kills.
        let reserved = lease?.reserve()
        let slot = lease.flatMap { lease in reserved.map { LeaseSlot(lease.slot(of: $0)) } }
        let pid: pid_t
        do throws(SystemError) {
            pid = try NicenessLane.perform(niceness: niceness) { () throws(SystemError) -> pid_t in
                try Spawner.spawn(command, stdout: stdoutPipe.write, stderr: stderrPipe.write, leaseEntry: slot?.pointer)
            }
        } catch {
            if let reserved { lease?.remove(reserved) }
            stdoutPipe.closeBoth()
            stderrPipe.closeBoth()
            throw error
        }
        // The write ends stay open here until the group is reaped (``ChildMonitor``): the command's exit makes
        // no end of file of its own, so its end wakes the monitor once.
        let group = ChildProcessGroup(pid: pid, killGracePeriod: killGracePeriod, output: output, lease: lease,
                                      monitor: monitor, onReaped: onReaped, onEnd: onEnd)
        // Listed before anything can reap it (the monitor and the reaper thread start below).
        if let reserved { group.adopt(reserved) } else { group.list() }
        // No pidfd (a kernel before 5.3, or no descriptor left): a thread waits for the group instead.
        let exit = (try? ChildSpawn.exitDescriptor(of: pid).get()) ?? -1
        let watched = monitor.watch(group, stdout: stdoutPipe.read, stderr: stderrPipe.read, exit: exit,
                                    writeEnds: (stdoutPipe.write, stderrPipe.write))
        // After the watch: the monitor must know the group when the reaper thread says it is gone.
        if !watched { group.startReaperThread() }
        return group
    }

    /// Makes the worker a child subreaper once: orphaned descendants are re-parented to it rather than
    /// to init, so it can reap every member of an operation's process group.
    private static let subreaper: Result<Void, SystemError> = Result { () throws(SystemError) in
        if case .failure(let failure) = ChildSpawn.becomeChildSubreaper() {
            throw SystemError(call: "prctl", errno: failure.errno, detail: "PR_SET_CHILD_SUBREAPER")
        }
    }

    private static func ensureSubreaper() throws(SystemError) { try subreaper.get() }

    /// Stops the group: SIGTERM (and SIGCONT) now, SIGKILL after the grace period if anything is left.
    /// Safe to call more than once and after the group is gone.
    func terminate() {
        let proceed: Bool = lock.withLock {
            guard !groupReaped, !terminating else { return false }
            terminating = true
            if termination == nil { killedByUs = true }
            return true
        }
        guard proceed else { return }
        // Nobody left in the group (the usual case once the leader has exited): nothing to escalate.
        guard signalGroup(SIGTERM) else { return }
        signalGroup(SIGCONT)
        Deadlines.shared.schedule(after: killGracePeriod) { [weak self] in
            guard let self, !self.lock.withLock({ self.groupReaped }) else { return }
            self.signalGroup(SIGKILL)
        }
    }

    /// Sends `signal` to the group; false when the group has no member left (ESRCH).
    @discardableResult
    private func signalGroup(_ signal: Int32) -> Bool {
        // EPERM (a member changed its credentials) cannot be helped here; SIGKILL after the grace period is
        // the last resort either way, so it counts as "someone is there".
        kill(-pid, signal) == 0 || errno != ESRCH
    }

    /// Called by the monitor when the leader's pidfd is readable: reaps the leader, then every member that is
    /// gone already; members still running are waited for by a thread of their own.
    func leaderEnded() {
        unlist()  // before the reaps below, which may take the group's last member
        var status: Int32 = 0
        let leaderReaped = waitpid(pid, &status, WNOHANG) == pid
        if leaderReaped { recordExit(status) }
        while true {
            let member = waitpid(-pid, &status, WNOHANG)
            if member > 0 { continue }
            if member < 0 && errno == EINTR { continue }
            if member == 0 {
                list()  // members are left: the group's id is still theirs
                // Members left behind (background jobs) are stopped like a cancel. Only now: when none is
                // left — nearly always — there is nobody to signal (that `kill` cost a system call per command).
                if leaderReaped { terminate() }
                return startReaperThread()
            }
            break  // ECHILD: no member of the group is left
        }
        groupGone()
    }

    /// Waits for the group on a thread of its own (the leader too, when there is no pidfd).
    private func startReaperThread() {
        let reaper = Thread { self.reapLoop() }
        reaper.name = "opq-reap-\(pid)"
        reaper.stackSize = 256 * 1024
        reaper.start()
    }

    private func reapLoop() {
        waiting: while true {
            // Waits for a member to end without reaping it, so the group is unlisted before the reap that
            // may take its last member.
            var info = siginfo_t()
            do {
                _ = try SystemCall.check("waitid", "process group \(pid)") { waitid(P_PGID, id_t(pid), &info, WEXITED | WNOWAIT) }
            } catch {
                break  // ECHILD: no member of the group is left (any other error cannot be retried either)
            }
            unlist()
            var leaderReaped = false
            while true {
                var status: Int32 = 0
                let reaped = waitpid(-pid, &status, WNOHANG)
                if reaped == pid {
                    recordExit(status)
                    leaderReaped = true
                }
                if reaped > 0 || (reaped < 0 && errno == EINTR) { continue }
                if reaped == 0 {
                    list()  // members are left: the group's id is still theirs
                    // Left behind by the leader (background jobs): stopped like a cancel. Only while members
                    // are left — once none is, the group's id may be another's.
                    if leaderReaped { terminate() }
                    continue waiting
                }
                break waiting  // ECHILD: no member of the group is left
            }
        }
        unlist()
        groupGone()
        monitor.wake()  // the monitor closes its copies of the write ends: the drain grace period starts
    }

    /// Lists the group with the lease watchdog (no-op without one, or when listed already).
    private func list() {
        guard let lease else { return }
        lock.withLock {
            if listing == nil { listing = lease.add(group: pid) }
        }
    }

    /// Takes over the entry the group's leader listed itself in when it was spawned (``LeaseWatchdog/reserve()``).
    private func adopt(_ reserved: LeaseWatchdog.Listing) {
        lease?.confirm(reserved, group: pid)
        lock.withLock { listing = reserved }
    }

    /// Unlists the group (no-op when it is not listed); returns once the watchdog does not signal it.
    private func unlist() {
        guard let lease, let listed = lock.withLock({ () -> LeaseWatchdog.Listing? in
            defer { listing = nil }
            return listing
        }) else { return }
        lease.remove(listed)
    }

    private func groupGone() {
        onReaped?(pid)  // before `groupReaped` is set, so before `onEnd` whichever thread ends the group
        lock.withLock {
            groupReaped = true
            reapedTime = Self.now()
        }
        endIfDone()
    }

    /// When the group was reaped (``now()`` seconds), or nil while it is not.
    var reapedAt: Double? { lock.withLock { groupReaped ? reapedTime : nil } }

    /// Monotonic seconds, the clock of ``reapedAt``.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// How the leader ended, from its wait status.
    private func recordExit(_ status: Int32) {
        let signal = status & 0x7f
        let outcome: Termination = signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
        lock.withLock { termination = outcome }
    }

    /// Takes room for a piece of `count` bytes in the output window (always true when nothing is streamed);
    /// false: the window is full and calls `wake` once it may have room. Never blocks.
    func reserveOutput(_ count: Int, wake: @escaping @Sendable () -> Void) -> Bool {
        output?.window.tryAcquire(count, orWake: wake) ?? true
    }

    /// Output read from the pipes by the monitor, its room in the window taken (``reserveOutput(_:wake:)``):
    /// streamed, then kept in the tail.
    func received(_ chunk: UnsafeRawBufferPointer, isStdout: Bool) {
        output?.post(isStdout ? .stdout : .stderr, chunk)
        lock.withLock {
            if isStdout { stdoutTail.append(chunk) } else { stderrTail.append(chunk) }
        }
    }

    /// Both pipes are closed: at end of file, or `drainGraceAfterExit` after the group was reaped (a
    /// process that left the group may hold them open).
    func streamsClosed() {
        lock.withLock { streamsOpen = false }
        endIfDone()
    }

    /// Calls `onEnd` once both the group is reaped and the pipes are done (from whichever thread is last).
    private func endIfDone() {
        let outcome: Outcome? = lock.withLock {
            guard groupReaped, !streamsOpen, !ended else { return nil }
            ended = true
            return Outcome(termination: termination, killedByUs: killedByUs, stdout: stdoutTail, stderr: stderrTail)
        }
        if let outcome { onEnd(outcome) }
    }
}

/// A reserved lease entry's address, carried to the thread that spawns (the niceness lane): the memory is
/// the lease table's, which outlives every spawn.
// @unchecked Sendable: written only by the spawned child (and the watchdog's atomics on the C side).
private struct LeaseSlot: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Int32>
    init(_ pointer: UnsafeMutablePointer<Int32>) { self.pointer = pointer }
}
