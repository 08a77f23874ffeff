import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Hands the runner's ``AttemptEvent``s (from any thread) and stop requests to the agent's socket
/// thread, which never shares its socket.
///
/// Events go into a lock-protected array; the first one since the socket thread last looked also writes
/// one byte to a pipe whose read end sits in the socket thread's `Poller`, so the thread wakes at once
/// and takes the whole batch with ``take(pipeReadable:)``. At most one byte is ever pending, so the pipe
/// never fills. Events posted by the socket thread itself (an attempt started inline by a dispatch) write
/// no byte: that thread takes them before it next polls (``hasPending``), so waking it is a wasted
/// write and two reads per attempt.
// @unchecked Sendable: `events`, `signalled` and `owner` are guarded by `lock`; the descriptors are immutable
// after init (the read end belongs to the socket thread, which alone reads it).
final class EventInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [AttemptEvent] = []
    private var signalled = false
    /// The socket thread, once it called ``adoptCurrentThread()``: its posts need no wake-up.
    private var owner: pthread_t?
    /// The pipe's read end, for `Poller.add(fileDescriptor:)`.
    let readDescriptor: Int32
    private let writeDescriptor: Int32

    /// Why the pipe could not be made (no file descriptors left); ``WorkerAgent/run()`` throws it.
    let failure: SystemError?

    init() {
        var fds: [Int32] = [-1, -1]
        do throws(SystemError) {
            try SystemCall.check("pipe", "the worker's event inbox") { pipe(&fds) }
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
            failure = nil
        } catch {
            failure = error
        }
        readDescriptor = fds[0]
        writeDescriptor = fds[1]
    }

    deinit {
        if failure == nil {
            close(readDescriptor)
            close(writeDescriptor)
        }
    }

    /// The runner's sink: queues `event` and wakes the socket thread. Thread-safe, never blocks.
    var sink: AttemptEventSink { { [weak self] event in self?.post(event) } }

    /// Makes the calling thread the socket thread: what it posts itself is queued without a wake-up, so it
    /// must check ``hasPending`` before it blocks.
    func adoptCurrentThread() {
        let current = pthread_self()
        lock.withLock { owner = current }
    }

    /// Whether events wait to be taken (the socket thread polls without blocking then).
    var hasPending: Bool { lock.withLock { !events.isEmpty } }

    /// Queues `event` and wakes the socket thread (unless it is the caller).
    func post(_ event: AttemptEvent) {
        let current = pthread_self()
        let wake = lock.withLock {
            events.append(event)
            if let owner, pthread_equal(owner, current) != 0 { return false }
            return claimSignal()
        }
        if wake { writeByte() }
    }

    /// Wakes the socket thread without an event (a stop request).
    func wake() {
        if lock.withLock({ claimSignal() }) { writeByte() }
    }

    /// Called by the socket thread: empties the pipe and returns every event queued so far, in order.
    ///
    /// The pipe is read only when it may hold a byte: `pipeReadable` (the poll saw it readable) or a wake-up
    /// claimed since the last take. It is emptied before the events are taken, so a byte written for an
    /// event this call does not take is never lost; a byte written for one it does take (its poster was
    /// between the claim and the write) stays and costs one extra turn, as it always did.
    func take(pipeReadable: Bool = true) -> [AttemptEvent] {
        if pipeReadable || lock.withLock({ signalled }) {
            var buffer = [UInt8](repeating: 0, count: 64)
            while failure == nil, read(readDescriptor, &buffer, buffer.count) > 0 {}
        }
        return lock.withLock {
            signalled = false
            defer { events.removeAll(keepingCapacity: true) }
            return events
        }
    }

    /// True if the caller must write the wake-up byte (none is pending). Call with the lock held.
    private func claimSignal() -> Bool {
        defer { signalled = true }
        return !signalled
    }

    private func writeByte() {
        guard failure == nil else { return }
        var byte: UInt8 = 1
        // EAGAIN cannot happen (one byte at most is pending); EINTR is retried.
        while write(writeDescriptor, &byte, 1) < 0, errno == EINTR {}
    }
}
