import Foundation

/// Flow control for streamed command output: how many bytes of output chunks the worker may hold
/// (queued or sent) before the coordinator acknowledges them.
///
/// A command's drain thread ``acquire(_:)``s room for each chunk it read before posting it; while the
/// window is full it waits, so it stops reading the command's pipes and the command blocks on its writes
/// — the pipe's buffer, not the worker's memory, absorbs a fast writer. The socket thread
/// ``release(_:)``s a chunk's bytes when the coordinator acknowledged the `Reports` that carried it (or
/// when the chunk was dropped). Memory for output in flight is thus at most ``capacity`` plus one chunk
/// per command, however much the commands write.
///
/// ``open()`` lets every waiter through for good (the lease ended or the worker stops: nothing will be
/// acknowledged, and the attempts must be able to end).
public final class OutputWindow: @unchecked Sendable {
    /// The default window: 8 MiB of unacknowledged output per worker.
    public static let defaultCapacity = 8 << 20

    /// Bytes that may be in flight at once (a single chunk larger than this still passes alone).
    public let capacity: Int
    private let condition = NSCondition()
    private var inFlight = 0
    private var isOpen = false

    /// Creates a window of `capacity` bytes.
    public init(capacity: Int = OutputWindow.defaultCapacity) {
        precondition(capacity > 0, "OutputWindow capacity must be positive, got \(capacity)")
        self.capacity = capacity
    }

    /// Bytes acquired and not released yet.
    public var bytesInFlight: Int { condition.withLock { inFlight } }

    /// Waits until `count` more bytes fit (or nothing is in flight, or the window is open), then takes them.
    public func acquire(_ count: Int) {
        condition.withLock {
            while !isOpen && inFlight > 0 && inFlight + count > capacity { condition.wait() }
            inFlight += count
        }
    }

    /// Gives back `count` bytes (acknowledged or dropped chunks).
    public func release(_ count: Int) {
        guard count > 0 else { return }
        condition.withLock {
            inFlight = max(0, inFlight - count)
            condition.broadcast()
        }
    }

    /// Forgets what is in flight (the lease ended: what was sent will be acknowledged by no one, and the
    /// attempts waiting for room are being stopped). Later releases of those bytes are absorbed.
    public func reset() {
        condition.withLock {
            inFlight = 0
            condition.broadcast()
        }
    }

    /// Never blocks again: every waiter goes on, and so does every later ``acquire(_:)``.
    public func open() {
        condition.withLock {
            isOpen = true
            condition.broadcast()
        }
    }
}
