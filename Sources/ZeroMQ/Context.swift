#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CZeroMQ

/// A ZeroMQ context: the I/O threads and the registry of sockets that use them.
///
/// A context is thread-safe (libzmq contexts are), so it is `Sendable`: share one per process and
/// create a ``Socket`` on each thread that needs one. Sockets keep their context alive.
///
/// ``close()`` never hangs, even while sockets are open: it shuts the context down at once (every
/// blocking call on its sockets returns ``ZMQError/Kind/contextTerminated``, and new sockets can no
/// longer be made), and the final `zmq_ctx_term` runs as soon as the last open socket is closed —
/// right away when there is none. Sockets are created with `LINGER 0` and the context with
/// `ZMQ_BLOCKY 0`, so termination never waits for unsent messages.
// @unchecked Sendable: `state` (the open-socket count) is read and changed only under `mutex`; `handle` is libzmq's context, which is thread-safe.
public final class Context: @unchecked Sendable {
    /// Lifecycle; guarded by `mutex`.
    private enum State {
        /// Usable; `sockets` are open.
        case open(sockets: Int)
        /// ``close()`` was called while `sockets` were still open; terminate when they are closed.
        case shuttingDown(sockets: Int)
        /// `zmq_ctx_term` has run (or is running); `handle` must not be used.
        case terminated
    }

    /// The `void *` libzmq context.
    let handle: UnsafeMutableRawPointer
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var state = State.open(sockets: 0)

    /// Creates a context with `ioThreads` background I/O threads (one handles ~1 GB/s).
    public convenience init(ioThreads: Int32 = 1) throws(ZMQError) {
        try self.init(ioThreads: ioThreads, maxSockets: nil)
    }

    /// Creates a context with `ioThreads` background I/O threads and room for `maxSockets` open sockets
    /// (nil: libzmq's default, 1,023; each socket also takes a descriptor for its mailbox, so many
    /// sockets need a raised `RLIMIT_NOFILE` too).
    public init(ioThreads: Int32, maxSockets: Int32?) throws(ZMQError) {
        let handle = try zmqCall("zmq_ctx_new") { zmq_ctx_new() }
        do throws(ZMQError) {
            try zmqCall("zmq_ctx_set", detail: "ZMQ_BLOCKY") { zmq_ctx_set(handle, ZMQ_BLOCKY, 0) }
            try zmqCall("zmq_ctx_set", detail: "ZMQ_IO_THREADS") {
                zmq_ctx_set(handle, ZMQ_IO_THREADS, ioThreads)
            }
            if let maxSockets {
                try zmqCall("zmq_ctx_set", detail: "ZMQ_MAX_SOCKETS") { zmq_ctx_set(handle, ZMQ_MAX_SOCKETS, maxSockets) }
            }
        } catch {
            _ = try? zmqCall("zmq_ctx_term") { zmq_ctx_term(handle) }
            throw error
        }
        self.handle = handle
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        close()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Creates a socket of `type` in this context (see ``Socket/init(_:type:)``).
    public func socket(_ type: SocketType) throws(ZMQError) -> Socket {
        try Socket(self, type: type)
    }

    /// Shuts the context down and terminates it once no socket is open. Idempotent; never blocks
    /// on open sockets (their owners see ``ZMQError/Kind/contextTerminated`` and close them).
    public func close() {
        let terminateNow: Bool
        pthread_mutex_lock(mutex)
        switch state {
        case .shuttingDown, .terminated:
            pthread_mutex_unlock(mutex)
            return
        case .open(let sockets):
            _ = try? zmqCall("zmq_ctx_shutdown") { zmq_ctx_shutdown(handle) }
            terminateNow = sockets == 0
            state = terminateNow ? .terminated : .shuttingDown(sockets: sockets)
        }
        pthread_mutex_unlock(mutex)
        if terminateNow { terminate() }
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if case .open = state { return false }
        return true
    }

    /// Runs `create` (which makes a `zmq_socket`) and counts the new socket as open, unless the
    /// context is closed, in which case it throws `ETERM` as `zmq_socket` would.
    func registerSocket(
        _ create: (UnsafeMutableRawPointer) throws(ZMQError) -> UnsafeMutableRawPointer
    ) throws(ZMQError) -> UnsafeMutableRawPointer {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard case .open(let sockets) = state else {
            throw ZMQError(call: "zmq_socket", code: ETERM)
        }
        let socket = try create(handle)
        state = .open(sockets: sockets + 1)
        return socket
    }

    /// Called by ``Socket/close()`` after `zmq_close`; terminates a shut-down context whose last
    /// socket this was.
    func socketClosed() {
        var terminateNow = false
        pthread_mutex_lock(mutex)
        switch state {
        case .open(let sockets):
            state = .open(sockets: sockets - 1)
        case .shuttingDown(let sockets):
            terminateNow = sockets == 1
            state = terminateNow ? .terminated : .shuttingDown(sockets: sockets - 1)
        case .terminated:
            preconditionFailure("Context: a socket was closed after its context was terminated")
        }
        pthread_mutex_unlock(mutex)
        if terminateNow { terminate() }
    }

    /// `zmq_ctx_term`, once no socket is open: returns promptly (sockets have `LINGER 0`).
    private func terminate() {
        _ = try? zmqCall("zmq_ctx_term") { zmq_ctx_term(handle) }
    }

    /// The linked libzmq version, e.g. `(4, 3, 4)`.
    public static var version: (major: Int32, minor: Int32, patch: Int32) {
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return (major, minor, patch)
    }

    /// Loads libzmq now instead of at the first ZeroMQ call (≈ 3 ms here: libzmq and its 14 libraries), for
    /// a program that will need it soon and is waiting for something else meanwhile (`opq map --local`
    /// while its coordinator starts). Returns false if it cannot be loaded; the first call then says why.
    @discardableResult
    public static func loadLibrary() -> Bool {
        opq_zmq_load() != nil
    }

    /// Whether libzmq was built with `capability` (`"curve"`, `"ipc"`, `"draft"`…): `zmq_has`.
    public static func has(_ capability: String) -> Bool {
        zmq_has(capability) == 1
    }
}
