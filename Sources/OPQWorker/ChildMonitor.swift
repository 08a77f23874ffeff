import Foundation
import OPQSpawn
#if canImport(Glibc)
import Glibc
#endif

/// The worker's one thread that watches every running command: it drains the output pipes of all
/// ``ChildProcessGroup``s and notices their leaders' exits, with one `poll` over all of their descriptors.
///
/// Before, every command had two threads of its own (one draining, one blocked in `waitpid`): creating,
/// scheduling and ending them was most of the worker's CPU per command. Now a command costs two pipes and
/// a pidfd (`pidfd_open`, which polls readable when the leader has exited). Only the rare group that still
/// has members once its leader is reaped gets a thread blocked in `waitpid` (``ChildProcessGroup``).
///
/// **The thread never blocks on anything but `poll`.** Streamed output needs room in the worker's
/// ``OutputWindow`` (flow control: the coordinator acknowledges what it stored). A piece read while the
/// window is full is *parked* in its group's watch: the monitor stops polling that group's two pipes (so
/// the command blocks on its writes once the pipe buffer is full, as it did when it had a drain thread of
/// its own) and goes on polling every other group's pipes and every pidfd. The window calls back when it
/// gets room (``OutputWindow/tryAcquire(_:orWake:)``); the monitor then retries the parked pieces and
/// polls those pipes again. So one command's unacknowledged output delays neither the reaping of any
/// command (its own included: a stopped command's group is reaped while its output waits) nor the output
/// or the end of the others, and memory stays bounded: at most one parked piece (64 KiB) per command.
/// A command ends (``ChildProcessGroup``'s `onEnd`) only once its output is all read, so it waits for the
/// window; time spent parked does not count toward the drain grace period after the group is reaped.
///
/// Ownership: the `watching` list and every ``Watch`` in it belong to the monitor's thread alone;
/// ``watch(_:stdout:stderr:exit:)`` and the window's wake-ups reach it through `added`/`roomMaybe`
/// under `lock` plus one byte in the wake-up pipe. Descriptors are closed only by the monitor's thread,
/// after it stopped polling them, so a descriptor number reused elsewhere is never polled or read by mistake.
// @unchecked Sendable: `lock` guards `added` and `roomMaybe`; `watching` is touched only by the monitor's
// thread; the wake-up descriptors are immutable after init.
final class ChildMonitor: @unchecked Sendable {
    /// The worker process's monitor, started on first use.
    static let shared: Result<ChildMonitor, SystemError> = Result { () throws(SystemError) in try ChildMonitor() }

    /// One watched group and the descriptors still open for it (-1 once closed). Monitor thread only.
    private final class Watch {
        let group: ChildProcessGroup
        var stdout: Int32
        var stderr: Int32
        /// The leader's pidfd; -1 once the leader is reaped (or when there was none: a reaper thread waits).
        var exit: Int32
        /// A piece read while the output window was full, waiting for room; its pipes are not polled meanwhile.
        var parked: (bytes: [UInt8], isStdout: Bool)?
        /// When the piece was parked (``ChildProcessGroup/now()`` seconds).
        var parkedSince = 0.0
        /// Seconds spent parked so far: added to the drain grace period after the group is reaped.
        var parkedTotal = 0.0

        init(group: ChildProcessGroup, stdout: Int32, stderr: Int32, exit: Int32) {
            self.group = group
            self.stdout = stdout
            self.stderr = stderr
            self.exit = exit
        }

        var isDone: Bool { stdout < 0 && stderr < 0 && exit < 0 }
    }

    private let lock = NSLock()
    /// Registered since the monitor's thread last looked (guarded by `lock`).
    private var added: [Watch] = []
    /// An output window said it has room since the monitor's thread last looked (guarded by `lock`).
    private var roomMaybe = false
    /// Only the monitor's thread touches this.
    private var watching: [Watch] = []
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Given to a full ``OutputWindow``: called (once) when it may have room.
    private var roomWake: @Sendable () -> Void {
        { [self] in
            lock.withLock { roomMaybe = true }
            wake()
        }
    }

    private init() throws(SystemError) {
        var fds: [Int32] = [-1, -1]
        try SystemCall.check("pipe", "the worker's child monitor") { pipe(&fds) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        let thread = Thread { [self] in serve() }
        thread.name = "opq-children"
        thread.stackSize = 256 * 1024
        thread.start()
    }

    /// Starts watching `group`: its output pipes' read ends and, unless it is -1, the leader's pidfd. The
    /// monitor owns (and closes) the three descriptors from now on.
    func watch(_ group: ChildProcessGroup, stdout: Int32, stderr: Int32, exit: Int32) {
        lock.withLock { added.append(Watch(group: group, stdout: stdout, stderr: stderr, exit: exit)) }
        wake()
    }

    /// Makes the monitor look again (a group was reaped by its reaper thread: its drain grace starts).
    func wake() {
        var byte: UInt8 = 1
        // EAGAIN: a wake-up is pending already, which is as good.
        while write(wakeWrite, &byte, 1) < 0, errno == EINTR {}
    }

    private func serve() {
        // It lives as long as the worker: the next attempt it starts when one ends spawns from here.
        ChildSpawn.markThreadLongLived()
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        var polls: [pollfd] = []
        while true {
            let retryParked: Bool = lock.withLock {
                watching.append(contentsOf: added)
                added.removeAll(keepingCapacity: true)
                defer { roomMaybe = false }
                return roomMaybe
            }
            let now = ChildProcessGroup.now()
            if retryParked {
                for watch in watching where watch.parked != nil { unpark(watch, now: now) }
            }
            // Groups reaped with pipes still open (a process that left the group holds them): their output is
            // not waited for beyond the grace period (not counting time parked for the output window).
            var timeout: Int32 = -1
            for watch in watching where watch.parked == nil && (watch.stdout >= 0 || watch.stderr >= 0) {
                guard let reapedAt = watch.group.reapedAt else { continue }
                let left = ChildProcessGroup.drainGraceAfterExit + watch.parkedTotal - (now - reapedAt)
                if left <= 0 {
                    closeStreams(watch)
                } else {
                    timeout = min(timeout < 0 ? Int32.max : timeout, Int32(max(1, (left * 1000).rounded(.up))))
                }
            }
            watching.removeAll { $0.isDone }
            polls.removeAll(keepingCapacity: true)
            polls.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            for watch in watching {
                // A parked group's pipes are left out (-1: poll skips it) — not `events: 0`, which would
                // still report POLLHUP once the command has closed them.
                let parked = watch.parked != nil
                polls.append(pollfd(fd: parked ? -1 : watch.stdout, events: Int16(POLLIN), revents: 0))
                polls.append(pollfd(fd: parked ? -1 : watch.stderr, events: Int16(POLLIN), revents: 0))
                polls.append(pollfd(fd: watch.exit, events: Int16(POLLIN), revents: 0))
            }
            let ready = poll(&polls, nfds_t(polls.count), timeout)
            guard ready > 0 else { continue }
            if polls[0].revents != 0 {
                var buffer = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &buffer, buffer.count) > 0 {}
            }
            for (index, watch) in watching.enumerated() {
                let base = 1 + 3 * index
                if polls[base].revents != 0 { drain(watch, isStdout: true, into: &scratch) }
                if polls[base + 1].revents != 0, watch.parked == nil { drain(watch, isStdout: false, into: &scratch) }
                if polls[base + 2].revents != 0 {
                    close(watch.exit)
                    watch.exit = -1
                    watch.group.leaderEnded()
                }
            }
        }
    }

    /// Reads what one pipe holds (one read: poll says when there is more) and passes it on, or parks it
    /// when the output window is full; closes the pipe at end of file.
    private func drain(_ watch: Watch, isStdout: Bool, into scratch: inout [UInt8]) {
        let fd = isStdout ? watch.stdout : watch.stderr
        let count = scratch.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count > 0 {
            guard watch.group.reserveOutput(count, wake: roomWake) else {
                watch.parked = (Array(scratch[..<count]), isStdout)
                watch.parkedSince = ChildProcessGroup.now()
                return
            }
            scratch.withUnsafeBytes { watch.group.received(UnsafeRawBufferPointer(rebasing: $0[..<count]), isStdout: isStdout) }
        } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
            close(fd)
            if isStdout { watch.stdout = -1 } else { watch.stderr = -1 }
            if watch.stdout < 0 && watch.stderr < 0 { watch.group.streamsClosed() }
        }
    }

    /// Passes a parked piece on if the window has room now (else the window will wake the monitor again).
    private func unpark(_ watch: Watch, now: Double) {
        guard let parked = watch.parked, watch.group.reserveOutput(parked.bytes.count, wake: roomWake) else { return }
        watch.parked = nil
        watch.parkedTotal += now - watch.parkedSince
        parked.bytes.withUnsafeBytes { watch.group.received($0, isStdout: parked.isStdout) }
    }

    private func closeStreams(_ watch: Watch) {
        if watch.stdout >= 0 { close(watch.stdout) }
        if watch.stderr >= 0 { close(watch.stderr) }
        watch.stdout = -1
        watch.stderr = -1
        watch.group.streamsClosed()
    }
}
