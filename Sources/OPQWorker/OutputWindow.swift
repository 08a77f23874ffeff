import Foundation

/// Flow control for streamed command output: how many bytes of output chunks the worker may hold
/// (queued or sent) before the coordinator acknowledges them.
///
/// The worker's ``ChildMonitor`` ``tryAcquire(_:orWake:)``s room for each piece it read before posting it;
/// while the window is full it parks the piece and stops reading that command's pipes, so the command
/// blocks on its writes — the pipe's buffer, not the worker's memory, absorbs a fast writer — while the
/// monitor goes on with every other command. The socket thread ``release(_:)``s a chunk's bytes when the
/// coordinator acknowledged the `Reports` that carried it (or when the chunk was dropped), which wakes the
/// parked pieces' monitor. Memory for output in flight is thus at most ``capacity`` plus one chunk per
/// command, however much the commands write. Nothing here ever blocks a thread.
///
/// ``open()`` lets every piece through for good (the lease ended or the worker stops: nothing will be
/// acknowledged, and the attempts must be able to end).
// @unchecked Sendable: every stored var is guarded by `lock`; `capacity` is immutable.
public final class OutputWindow: @unchecked Sendable {
    /// The default window: 8 MiB of unacknowledged output per worker.
    public static let defaultCapacity = 8 << 20

    /// Bytes that may be in flight at once (a single chunk larger than this still passes alone).
    public let capacity: Int
    private let lock = NSLock()
    private var inFlight = 0
    private var isOpen = false
    /// Told once when room may have appeared (a release, a reset, ``open()``); guarded by `lock`.
    private var wakes: [@Sendable () -> Void] = []

    /// Creates a window of `capacity` bytes.
    public init(capacity: Int = OutputWindow.defaultCapacity) {
        precondition(capacity > 0, "OutputWindow capacity must be positive, got \(capacity)")
        self.capacity = capacity
    }

    /// Bytes acquired and not released yet.
    public var bytesInFlight: Int { lock.withLock { inFlight } }

    /// Takes room for `count` bytes if they fit now (or nothing is in flight, or the window is open) and
    /// returns true. Otherwise returns false and calls `wake` once, on the thread of the next
    /// ``release(_:)``, ``reset()`` or ``open()`` (then try again). Never blocks.
    func tryAcquire(_ count: Int, orWake wake: @escaping @Sendable () -> Void) -> Bool {
        lock.withLock {
            guard isOpen || inFlight == 0 || inFlight + count <= capacity else {
                wakes.append(wake)
                return false
            }
            inFlight += count
            return true
        }
    }

    /// Gives back `count` bytes (acknowledged or dropped chunks).
    public func release(_ count: Int) {
        guard count > 0 else { return }
        changed { inFlight = max(0, inFlight - count) }
    }

    /// Forgets what is in flight (the lease ended: what was sent will be acknowledged by no one, and the
    /// attempts waiting for room are being stopped). Later releases of those bytes are absorbed.
    public func reset() {
        changed { inFlight = 0 }
    }

    /// Never refuses again: every parked piece goes on, and so does every later ``tryAcquire(_:orWake:)``.
    public func open() {
        changed { isOpen = true }
    }

    /// Applies `change` and tells whoever waits for room (outside the lock).
    private func changed(_ change: () -> Void) {
        let waiting: [@Sendable () -> Void] = lock.withLock {
            change()
            defer { wakes.removeAll() }
            return wakes
        }
        for wake in waiting { wake() }
    }
}
