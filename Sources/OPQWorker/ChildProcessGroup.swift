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
/// - stdout and stderr are pipes drained by one dedicated thread (`poll` on both) into 64 KiB
///   ``TailBuffer``s. No Dispatch sources: libdispatch's event loop crashed intermittently here when
///   pipe descriptors were closed and reused under load, and a blocked Dispatch pool must not delay output.
/// - A dedicated thread blocks in `waitpid(-pgid)`. The worker is a child subreaper, so members orphaned
///   by the leader's exit are re-parented to it and reaped by the same loop: when `waitpid` answers
///   `ECHILD`, no member of the group is left, not even a zombie.
/// - When the leader exits, whatever is left of its group gets SIGTERM, then SIGKILL after the grace
///   period: an operation owns its process group, and nothing of it outlives the operation.
/// - ``terminate()`` sends SIGTERM (and SIGCONT, for stopped members) to the group, then SIGKILL after the
///   grace period if any member is still there.
///
/// `onOutput`, when given, is called on the drain thread with every piece read, in order, before it is
/// kept in the tail; it may block (flow control: the pipes are not read meanwhile, so the command blocks
/// on its writes). `onEnd` is called once, when the group is reaped and both pipes are closed.
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
    private let onOutput: OutputSink?

    /// Told each piece of output as it is read (drain thread).
    typealias OutputSink = @Sendable (OutputChunk.Stream, UnsafeRawBufferPointer) -> Void

    private let lock = NSLock()
    private var termination: Termination?
    private var killedByUs = false
    private var terminating = false
    private var groupReaped = false
    private var openStreams = 2
    private var ended = false

    /// Guarded by `lock`.
    private var stdoutTail = TailBuffer()
    private var stderrTail = TailBuffer()
    private var reapedAt: Double = 0

    /// How long to wait for pipe EOF once the group is reaped (a process that left the group may still
    /// hold the pipes open; its output is not waited for beyond this).
    static let drainGraceAfterExit = 1.0

    private init(pid: pid_t, killGracePeriod: Double, onOutput: OutputSink?, onEnd: @escaping @Sendable (Outcome) -> Void) {
        self.pid = pid
        self.killGracePeriod = killGracePeriod
        self.onOutput = onOutput
        self.onEnd = onEnd
    }

    /// Spawns `command` in a new process group with niceness at least `niceness`, and starts draining and
    /// reaping it. Throws if the program cannot be started (not found, not executable, bad directory).
    static func spawn(
        _ command: Command, niceness: Int32, killGracePeriod: Double, onOutput: OutputSink? = nil,
        onEnd: @escaping @Sendable (Outcome) -> Void
    ) throws(SystemError) -> ChildProcessGroup {
        try ensureSubreaper()
        let stdoutPipe = try Pipe.make()
        let stderrPipe: Pipe
        do { stderrPipe = try Pipe.make() } catch { stdoutPipe.closeBoth(); throw error }
        let pid: pid_t
        do throws(SystemError) {
            pid = try NicenessLane.perform(niceness: niceness) { () throws(SystemError) -> pid_t in
                try Spawner.spawn(command, stdout: stdoutPipe.write, stderr: stderrPipe.write)
            }
        } catch {
            stdoutPipe.closeBoth()
            stderrPipe.closeBoth()
            throw error
        }
        Pipe.close(stdoutPipe.write)
        Pipe.close(stderrPipe.write)
        let group = ChildProcessGroup(pid: pid, killGracePeriod: killGracePeriod, onOutput: onOutput, onEnd: onEnd)
        let drainer = Thread { group.drainLoop(stdout: stdoutPipe.read, stderr: stderrPipe.read) }
        drainer.name = "opq-drain-\(pid)"
        drainer.stackSize = 256 * 1024
        drainer.start()
        let reaper = Thread { group.reapLoop() }
        reaper.name = "opq-reap-\(pid)"
        reaper.stackSize = 256 * 1024
        reaper.start()
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

    private func reapLoop() {
        while true {
            var status: Int32 = 0
            let reaped: pid_t
            do {
                reaped = try SystemCall.check("waitpid", "process group \(pid)") { waitpid(-pid, &status, 0) }
            } catch {
                break  // ECHILD: no member of the group is left (any other error cannot be retried either)
            }
            if reaped == pid { leaderExited(status) }
        }
        lock.withLock {
            groupReaped = true
            reapedAt = Self.now()
        }
        endIfDone()
    }

    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    private func leaderExited(_ status: Int32) {
        let signal = status & 0x7f
        let outcome: Termination = signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
        lock.withLock { termination = outcome }
        // Members left behind (background jobs) are stopped like a cancel; ESRCH if there are none.
        terminate()
    }

    /// Runs on the drain thread: reads both pipes until end of file, or until `drainGraceAfterExit` after
    /// the group was reaped (a process that left the group may hold them open).
    private func drainLoop(stdout: Int32, stderr: Int32) {
        var open: [(fd: Int32, isStdout: Bool)] = [(stdout, true), (stderr, false)]
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        while !open.isEmpty {
            let (reaped, since) = lock.withLock { (groupReaped, reapedAt) }
            var timeout: Int32 = 100  // ms: notices the reap without a wake-up channel
            if reaped {
                let left = Self.drainGraceAfterExit - (Self.now() - since)
                if left <= 0 { break }
                timeout = Int32(max(1, left * 1000))
            }
            var polls = open.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&polls, nfds_t(polls.count), timeout)
            if ready < 0 && errno != EINTR { break }
            guard ready > 0 else { continue }
            for (k, item) in polls.enumerated().reversed() where item.revents != 0 {
                let count = scratch.withUnsafeMutableBytes { read(item.fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    scratch.withUnsafeBytes { bytes in
                        let chunk = UnsafeRawBufferPointer(rebasing: bytes[..<count])
                        onOutput?(open[k].isStdout ? .stdout : .stderr, chunk)
                        lock.withLock {
                            if open[k].isStdout { stdoutTail.append(chunk) } else { stderrTail.append(chunk) }
                        }
                    }
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    Pipe.close(item.fd)
                    open.remove(at: k)
                }
            }
        }
        for item in open { Pipe.close(item.fd) }
        lock.withLock { openStreams = 0 }
        endIfDone()
    }

    /// Calls `onEnd` once both the group is reaped and the pipes are done (from whichever thread is last).
    private func endIfDone() {
        let outcome: Outcome? = lock.withLock {
            guard groupReaped, openStreams == 0, !ended else { return nil }
            ended = true
            return Outcome(termination: termination, killedByUs: killedByUs, stdout: stdoutTail, stderr: stderrTail)
        }
        if let outcome { onEnd(outcome) }
    }
}
