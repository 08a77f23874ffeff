import COPQSpawn
#if canImport(Glibc)
import Glibc
#endif

/// A level-triggered epoll set (`opq_monitor_*` in `COPQSpawn`): descriptors added with a 64-bit token,
/// and one descriptor of its own that polls readable while any of them is ready — so another thread's
/// `poll` (a worker's socket thread, in its `zmq_poll`) can watch every child at once, and descriptors
/// can be added from any thread without waking anyone.
///
/// Thread-safe for ``add(_:token:)`` and ``remove(_:)``; ``wait(timeout:into:)`` is called by one
/// thread at a time.
// @unchecked Sendable: the only stored state is the immutable descriptor (the kernel synchronizes the set).
public final class ReadinessSet: @unchecked Sendable {
    /// One ready descriptor.
    public struct Event: Sendable {
        /// The token it was added with.
        public var token: UInt64
        /// False when it reported only a hang-up (a pipe at end of file with nothing left to read).
        public var hasData: Bool
    }

    /// The most events one ``wait(timeout:into:)`` returns: a wait that fills them all may have left more ready.
    public static let capacity = 16

    /// The set's own descriptor (readable while a descriptor in it is ready); closed by deinit.
    public let descriptor: Int32

    /// Creates an empty set; fails with the `errno` of `epoll_create1`.
    public init() throws(SpawnFailure) {
        let fd = opq_monitor_create()
        guard fd >= 0 else { throw SpawnFailure(errno: -fd) }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Adds `fd` (watched for readable and hang-up). Returns the `errno` on failure (ENOMEM, ENOSPC).
    @discardableResult
    public func add(_ fd: Int32, token: UInt64) -> Int32 {
        let result = opq_monitor_add(descriptor, fd, token)
        return result < 0 ? -result : 0
    }

    /// Adds `fd` to be reported once (`EPOLLONESHOT`): after its first event it stays in the set disarmed,
    /// so it may be closed without ``remove(_:)`` (a pidfd, whose exit is its only event). Returns the
    /// `errno` on failure.
    @discardableResult
    public func addOnce(_ fd: Int32, token: UInt64) -> Int32 {
        let result = opq_monitor_add_once(descriptor, fd, token)
        return result < 0 ? -result : 0
    }

    /// Arms `fd` (added with ``addOnce(_:token:)``, its event taken) for one more event: reported at the
    /// next wait if it is ready by then. Returns the `errno` on failure.
    @discardableResult
    public func rearm(_ fd: Int32, token: UInt64) -> Int32 {
        let result = opq_monitor_rearm(descriptor, fd, token)
        return result < 0 ? -result : 0
    }

    /// Removes `fd` (call it before closing `fd`; a descriptor not in the set is ignored).
    public func remove(_ fd: Int32) { _ = opq_monitor_remove(descriptor, fd) }

    /// Waits up to `timeout` milliseconds (-1: no limit, 0: no wait) and fills `events` with the ready
    /// descriptors (at most ``capacity``: what is left stays ready for the next call); returns how many (0
    /// also for EINTR).
    public func wait(timeout: Int32, into events: inout [Event]) -> Int {
        // Sixteen (``capacity``) slots each, on the stack.
        var tokens = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0),
                      UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        var flags = (UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0),
                     UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0))
        let count = withUnsafeMutableBytes(of: &tokens) { tokenBytes in
            withUnsafeMutableBytes(of: &flags) { flagBytes in
                Int(opq_monitor_wait(descriptor, tokenBytes.baseAddress!.assumingMemoryBound(to: UInt64.self),
                                     flagBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(Self.capacity), timeout))
            }
        }
        events.removeAll(keepingCapacity: true)
        guard count > 0 else { return 0 }
        withUnsafeBytes(of: &tokens) { tokenBytes in
            withUnsafeBytes(of: &flags) { flagBytes in
                for index in 0..<count {
                    events.append(Event(token: tokenBytes.load(fromByteOffset: index * 8, as: UInt64.self),
                                        hasData: flagBytes[index] != 0))
                }
            }
        }
        return count
    }
}
