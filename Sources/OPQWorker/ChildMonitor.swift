import Foundation
import OPQSpawn
#if canImport(Glibc)
import Glibc
#endif

/// Watches running commands: drains the output pipes of their ``ChildProcessGroup``s and notices their
/// leaders' exits, through one level-triggered epoll set (``ReadinessSet``) over all of their descriptors.
///
/// **Who services it.** A worker agent's monitor is serviced by the agent's socket thread: the set's
/// ``descriptor`` sits in that thread's `zmq_poll` beside the coordinator's socket, and the thread calls
/// ``service(timeout:)`` when it is readable — so a command's end is reaped, reported and sent in one turn
/// of the thread that also spawns the next command, with no thread hop (a hop to a monitor thread and back
/// was a third of a short command's latency from exit to report). A monitor made with ``shared`` (a
/// runner or an operation used without an agent: tests, programs) has a thread of its own that does the
/// same. Descriptors are added from any thread (`epoll_ctl` wakes nobody; a spawn needs no wake-up byte).
///
/// **One wake-up per command.** The worker keeps its own copy of each pipe's write end until the group is
/// reaped: a command closing its output at exit (23 µs before its pidfd says so) makes no end of file
/// that would wake the servicing thread once more. When the group is reaped, the monitor closes its copies
/// and looks again at once: the pipes are at end of file (after whatever they still hold) unless a process
/// that left the group still has them open, whose output is waited for at most ``ChildProcessGroup/
/// drainGraceAfterExit`` (not counting time parked for the output window; a ``Deadlines`` entry wakes the
/// monitor when it is over). A command that closes its output and runs on ends when it exits, as before.
///
/// **Flow control; nothing blocks.** Streamed output needs room in the worker's ``OutputWindow``. A piece
/// read while the window is full is *parked* in its group's watch: the monitor takes that group's pipes out
/// of the set (so the command blocks on its writes once the pipe buffer is full) and goes on with every
/// other group's pipes and every pidfd. The window calls back when it gets room
/// (``OutputWindow/tryAcquire(_:orWake:)``), which writes a byte to the monitor's wake-up pipe; the monitor
/// then retries the parked pieces and puts those pipes back. So one command's unacknowledged output delays
/// neither the reaping of any command nor the output or the end of the others, and memory stays bounded:
/// at most one parked piece (64 KiB) per command. A command ends (``ChildProcessGroup``'s `onEnd`) only
/// once its output is all read.
///
/// Ownership: the `watches` table is guarded by `lock` (a spawn adds to it from any thread); each
/// ``Watch``'s fields and the scratch buffers belong to the servicing thread (one at a time). Descriptors
/// are taken out of the set and closed only by the servicing thread; an event names its watch by id, not
/// by descriptor, so a descriptor number reused meanwhile is never read by mistake.
// @unchecked Sendable: `lock` guards `watches`, `nextID` and `roomMaybe`; the rest is immutable or belongs
// to the one servicing thread.
final class ChildMonitor: @unchecked Sendable {
    /// The process's monitor with a thread of its own, for operations run without a worker agent.
    static let shared: Result<ChildMonitor, SystemError> = Result { () throws(SystemError) in
        let monitor = try ChildMonitor()
        let thread = Thread {
            // It lives as long as the process: the next attempt it starts when one ends spawns from here.
            ChildSpawn.markThreadLongLived()
            while true { monitor.service(timeout: -1) }
        }
        thread.name = "opq-children"
        thread.stackSize = 256 * 1024
        thread.start()
        return monitor
    }

    /// Which descriptor of a watch an event is about: the low two bits of its token (the rest is the
    /// watch's id; token 0 is the wake-up pipe).
    private enum Kind: UInt64 {
        case stdout = 0, stderr = 1, exit = 2

        /// The token of watch `id`'s descriptor of this kind.
        func token(for id: UInt64) -> UInt64 { id << 2 | rawValue }
    }

    /// One watched group and the descriptors still open for it (-1 once closed). Servicing thread only.
    private final class Watch {
        let id: UInt64
        let group: ChildProcessGroup
        var stdout: Int32
        var stderr: Int32
        /// The leader's pidfd; -1 once the leader is reaped (or when there was none: a reaper thread waits).
        var exit: Int32
        /// The worker's copies of the pipes' write ends, closed once the group is reaped.
        var writeEnds: (stdout: Int32, stderr: Int32)
        /// A piece read while the output window was full, waiting for room; its pipes are out of the set.
        var parked: (bytes: [UInt8], isStdout: Bool)?
        /// When the piece was parked (``ChildProcessGroup/now()`` seconds).
        var parkedSince = 0.0
        /// Seconds spent parked so far: added to the drain grace period after the group is reaped.
        var parkedTotal = 0.0
        /// When a wake-up for the end of the drain grace period is scheduled (nil: none).
        var graceWakeAt: Double?

        init(id: UInt64, group: ChildProcessGroup, stdout: Int32, stderr: Int32, exit: Int32, writeEnds: (Int32, Int32)) {
            self.id = id
            self.group = group
            self.stdout = stdout
            self.stderr = stderr
            self.exit = exit
            self.writeEnds = writeEnds
        }

        var isDone: Bool { stdout < 0 && stderr < 0 && exit < 0 && writeEnds.stdout < 0 && writeEnds.stderr < 0 }
    }

    /// The set's own descriptor: readable while something needs ``service(timeout:)``.
    var descriptor: Int32 { readiness.descriptor }

    private let readiness: ReadinessSet
    private let lock = NSLock()
    /// Every group not done yet, by id (guarded by `lock`).
    private var watches: [UInt64: Watch] = [:]
    private var nextID: UInt64 = 1
    /// An output window said it has room since the servicing thread last looked (guarded by `lock`).
    private var roomMaybe = false
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Servicing thread only.
    private var events: [ReadinessSet.Event] = []
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    /// Given to a full ``OutputWindow``: called (once) when it may have room.
    private var roomWake: @Sendable () -> Void {
        { [self] in
            lock.withLock { roomMaybe = true }
            wake()
        }
    }

    /// A monitor serviced by whoever polls ``descriptor`` and calls ``service(timeout:)``.
    init() throws(SystemError) {
        do throws(SpawnFailure) {
            readiness = try ReadinessSet()
        } catch {
            throw SystemError(call: "epoll_create1", errno: error.errno, detail: "the worker's child monitor")
        }
        var fds: [Int32] = [-1, -1]
        try SystemCall.check("pipe", "the worker's child monitor") { pipe(&fds) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        let failed = readiness.add(wakeRead, token: 0)
        if failed != 0 {
            close(wakeRead)
            close(wakeWrite)
            throw SystemError(call: "epoll_ctl", errno: failed, detail: "the worker's child monitor")
        }
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Starts watching `group`: its output pipes' read ends, the worker's copies of their write ends (closed
    /// once the group is reaped) and, unless it is -1, the leader's pidfd. The monitor owns (and closes) the
    /// descriptors from now on. Any thread; wakes nobody unless one is ready. Returns whether the pidfd is
    /// watched: if not (-1, or the set refused it), the caller reaps the group on a thread of its own.
    func watch(
        _ group: ChildProcessGroup, stdout: Int32, stderr: Int32, exit: Int32, writeEnds: (stdout: Int32, stderr: Int32)
    ) -> Bool {
        let id: UInt64 = lock.withLock {
            defer { nextID += 1 }
            watches[nextID] = Watch(id: nextID, group: group, stdout: stdout, stderr: stderr, exit: exit, writeEnds: writeEnds)
            return nextID
        }
        // Each reported once and armed again after each read (``drain(_:isStdout:hasData:)``): at the end of
        // file it was just reported, so it is closed without a removal (two system calls fewer per command).
        readiness.addOnce(stdout, token: Kind.stdout.token(for: id))
        readiness.addOnce(stderr, token: Kind.stderr.token(for: id))
        // A pidfd the set refused stays open until the reaper thread has reaped the group (``lookEverywhere()``).
        // Reported once: its exit is all a pidfd says, and it is closed after it without a removal.
        return exit >= 0 && readiness.addOnce(exit, token: Kind.exit.token(for: id)) == 0
    }

    /// Whether any command's process group is watched (running, or its output or end not handled yet).
    var isWatching: Bool { lock.withLock { !watches.isEmpty } }

    /// Makes the servicing thread look at every watch (a group was reaped by its reaper thread, a drain
    /// grace period is over, an output window has room).
    func wake() {
        var byte: UInt8 = 1
        // EAGAIN: a wake-up is pending already, which is as good.
        while write(wakeWrite, &byte, 1) < 0, errno == EINTR {}
    }

    /// Handles what is ready, waiting up to `timeout` milliseconds (-1: until something is; 0: not at all)
    /// for the first of it: reads output, reaps exited leaders (a group's end is reported from here), takes
    /// parked output on. One thread at a time.
    func service(timeout: Int32 = 0) {
        var wait = timeout
        var reaped: [Watch] = []
        // Rounds until nothing is ready — one more after a reap: the group's pipes end now (after what they
        // hold) unless a process that left the group holds them. Bounded, so such a process writing
        // without end cannot keep the caller here: what is left stays ready for the next call.
        for _ in 0..<16 {
            let count = readiness.wait(timeout: wait, into: &events)
            wait = 0
            let reapedBefore = reaped.count
            for event in events.prefix(count) { handle(event, reaped: &reaped) }
            if count < ReadinessSet.capacity && reaped.count == reapedBefore { break }
        }
        guard !reaped.isEmpty else { return }
        let now = ChildProcessGroup.now()
        for watch in reaped {
            checkGrace(watch, now: now)
            forgetIfDone(watch)
        }
    }

    /// One ready descriptor; a group reaped here is added to `reaped`.
    private func handle(_ event: ReadinessSet.Event, reaped: inout [Watch]) {
        if event.token == 0 { return reaped += lookEverywhere() }
        guard let watch = lock.withLock({ watches[event.token >> 2] }) else { return }
        switch Kind(rawValue: event.token & 3) {
        case .stdout?: if watch.stdout >= 0, watch.parked == nil { drain(watch, isStdout: true, hasData: event.hasData) }
        case .stderr?: if watch.stderr >= 0, watch.parked == nil { drain(watch, isStdout: false, hasData: event.hasData) }
        case .exit?, nil:
            guard watch.exit >= 0 else { break }
            close(watch.exit)  // disarmed by its one event (``ReadinessSet/addOnce(_:token:)``): no removal first
            watch.exit = -1
            watch.group.leaderEnded()
            if watch.group.reapedAt != nil, closeWriteEnds(watch) { reaped.append(watch) }
        }
        forgetIfDone(watch)
    }

    /// A wake-up: empties the pipe, retries parked pieces, and closes the write ends of groups reaped by a
    /// reaper thread and the pipes whose drain grace is over. Returns the watches it closed write ends of.
    private func lookEverywhere() -> [Watch] {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, buffer.count) > 0 {}
        let (all, retryParked): ([Watch], Bool) = lock.withLock {
            defer { roomMaybe = false }
            return (Array(watches.values), roomMaybe)
        }
        let now = ChildProcessGroup.now()
        var reaped: [Watch] = []
        for watch in all {
            if retryParked, watch.parked != nil { unpark(watch, now: now) }
            if watch.group.reapedAt != nil {
                if watch.exit >= 0 {  // refused by the set: a reaper thread reaped the group
                    close(watch.exit)
                    watch.exit = -1
                }
                if closeWriteEnds(watch) { reaped.append(watch) } else { checkGrace(watch, now: now) }
            }
            forgetIfDone(watch)
        }
        return reaped
    }

    /// Closes the worker's copies of the write ends; false if they were closed already.
    private func closeWriteEnds(_ watch: Watch) -> Bool {
        guard watch.writeEnds.stdout >= 0 || watch.writeEnds.stderr >= 0 else { return false }
        if watch.writeEnds.stdout >= 0 { close(watch.writeEnds.stdout) }
        if watch.writeEnds.stderr >= 0 { close(watch.writeEnds.stderr) }
        watch.writeEnds = (-1, -1)
        return true
    }

    /// A reaped group's pipes still open (a process that left the group holds them) are not waited for
    /// beyond the grace period, not counting time parked for the output window.
    private func checkGrace(_ watch: Watch, now: Double) {
        guard watch.parked == nil, watch.stdout >= 0 || watch.stderr >= 0, let reapedAt = watch.group.reapedAt else { return }
        let left = ChildProcessGroup.drainGraceAfterExit + watch.parkedTotal - (now - reapedAt)
        if left <= 0 { return closeStreams(watch) }
        if let scheduled = watch.graceWakeAt, scheduled <= now + left + 0.001, scheduled > now { return }
        watch.graceWakeAt = now + left
        Deadlines.shared.schedule(after: left + 0.001) { [weak self] in self?.wake() }
    }

    /// Reads what one pipe holds (one read: the set, armed again, says when there is more) and passes it on,
    /// or parks it when the output window is full; closes the pipe at end of file — its event just taken, it is
    /// disarmed in the set (``ReadinessSet/addOnce(_:token:)``), and the close takes it out.
    private func drain(_ watch: Watch, isStdout: Bool, hasData: Bool) {
        let fd = isStdout ? watch.stdout : watch.stderr
        let count = hasData ? scratch.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } : 0
        if count > 0 {
            guard watch.group.reserveOutput(count, wake: roomWake) else {
                watch.parked = (Array(scratch[..<count]), isStdout)
                watch.parkedSince = ChildProcessGroup.now()
                if watch.stdout >= 0 { readiness.remove(watch.stdout) }
                if watch.stderr >= 0 { readiness.remove(watch.stderr) }
                return
            }
            scratch.withUnsafeBytes { watch.group.received(UnsafeRawBufferPointer(rebasing: $0[..<count]), isStdout: isStdout) }
        } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
            close(fd)
            if isStdout { watch.stdout = -1 } else { watch.stderr = -1 }
            if watch.stdout < 0 && watch.stderr < 0 { watch.group.streamsClosed() }
            return
        }
        readiness.rearm(fd, token: (isStdout ? Kind.stdout : Kind.stderr).token(for: watch.id))
    }

    /// Passes a parked piece on if the window has room now (else the window will wake the monitor again),
    /// and puts the group's pipes back in the set.
    private func unpark(_ watch: Watch, now: Double) {
        guard let parked = watch.parked, watch.group.reserveOutput(parked.bytes.count, wake: roomWake) else { return }
        watch.parked = nil
        watch.parkedTotal += now - watch.parkedSince
        parked.bytes.withUnsafeBytes { watch.group.received($0, isStdout: parked.isStdout) }
        if watch.stdout >= 0 { readiness.addOnce(watch.stdout, token: Kind.stdout.token(for: watch.id)) }
        if watch.stderr >= 0 { readiness.addOnce(watch.stderr, token: Kind.stderr.token(for: watch.id)) }
    }

    private func closeStreams(_ watch: Watch) {
        for fd in [watch.stdout, watch.stderr] where fd >= 0 {
            readiness.remove(fd)
            close(fd)
        }
        watch.stdout = -1
        watch.stderr = -1
        watch.group.streamsClosed()
    }

    private func forgetIfDone(_ watch: Watch) {
        if watch.isDone { lock.withLock { watches[watch.id] = nil } }
    }
}
