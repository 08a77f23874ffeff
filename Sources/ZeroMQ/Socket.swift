#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CZeroMQ

/// The ZeroMQ socket patterns this module supports.
public enum SocketType: Sendable, CaseIterable {
    /// Addresses peers by routing id (first frame); fair-queues input from all of them.
    case router
    /// Load-balances output and fair-queues input across its peers; no envelope.
    case dealer
    /// Exclusive one-to-one pair (mostly for `inproc://`).
    case pair
    /// Publishes to all subscribers; never blocks (drops at the high-water mark).
    case pub
    /// Receives the messages of publishers it subscribed to (``SocketOption/subscribe``).
    case sub
    /// Sends to pull peers, load-balanced.
    case push
    /// Receives from push peers, fair-queued.
    case pull
    /// Strict request/reply client.
    case req
    /// Strict request/reply server.
    case rep

    /// The `ZMQ_*` socket type constant.
    var rawValue: Int32 {
        switch self {
        case .router: ZMQ_ROUTER
        case .dealer: ZMQ_DEALER
        case .pair: ZMQ_PAIR
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .push: ZMQ_PUSH
        case .pull: ZMQ_PULL
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        }
    }
}

/// A ZeroMQ socket, owned by one thread.
///
/// Like libzmq sockets, a `Socket` is **not thread-safe** and deliberately not `Sendable`: create it,
/// use it and close it on the thread that owns it (hand work to that thread through an `inproc://`
/// socket instead of sharing the socket). It keeps its ``Context`` alive.
///
/// A socket is created with `LINGER 0`, so closing it (or its context) drops unsent messages at
/// once. Call ``close()`` explicitly when done; `deinit` closes it too. Any use after `close()`
/// throws ``ZMQError/Kind/socketClosed``.
public final class Socket {
    /// The context this socket was created in.
    public let context: Context
    /// The socket's pattern.
    public let type: SocketType
    /// The `void *` libzmq socket; `nil` once closed.
    private var handle: UnsafeMutableRawPointer?

    /// Creates a socket of `type` in `context`, with `LINGER 0`.
    ///
    /// Throws ``ZMQError/Kind/contextTerminated`` if the context is closed.
    public init(_ context: Context, type: SocketType) throws(ZMQError) {
        self.context = context
        self.type = type
        handle = try context.registerSocket { context throws(ZMQError) in
            try zmqCall("zmq_socket") { zmq_socket(context, type.rawValue) }
        }
        try set(.linger, 0)
    }

    deinit { close() }

    /// Closes the socket, dropping unsent messages. Idempotent.
    ///
    /// Remove the socket from every ``Poller`` first: a poller holding a closed socket throws on
    /// its next ``Poller/poll(timeout:)``.
    public func close() {
        guard let handle else { return }
        self.handle = nil
        _ = try? zmqCall("zmq_close") { zmq_close(handle) }
        context.socketClosed()
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { handle == nil }

    /// The open libzmq socket, or a `.socketClosed` error naming `call`; counts a use (``uses``).
    @inline(__always)
    func openHandle(_ call: StaticString) throws(ZMQError) -> UnsafeMutableRawPointer {
        guard let handle else { throw ZMQError(call: call, code: ENOTSOCK, detail: "socket closed") }
        uses &+= 1
        return handle
    }

    /// The open libzmq socket for a ``Poller``, which counts its own uses (``notePolled()``).
    @inline(__always)
    func pollHandle() throws(ZMQError) -> UnsafeMutableRawPointer {
        guard let handle else { throw ZMQError(call: "zmq_poll", code: ENOTSOCK, detail: "socket closed") }
        return handle
    }

    /// How many calls into libzmq this socket has had (each may take in commands its I/O thread sent, and
    /// so consume the wake-up its descriptor gave): a ``Poller`` that saw it hold nothing may skip reading
    /// its events before the next wait only while this has not moved.
    private(set) var uses: UInt64 = 0

    /// A poller read the socket's events: counted as a use (another poller holding it must read them
    /// again); returns the count now.
    func notePolled() -> UInt64 {
        uses &+= 1
        return uses
    }

    /// Binds to `endpoint` and returns the endpoint actually bound (`ZMQ_LAST_ENDPOINT`): binding
    /// `tcp://127.0.0.1:*` returns the port the system chose, e.g. `tcp://127.0.0.1:49153`.
    @discardableResult
    public func bind(_ endpoint: String) throws(ZMQError) -> String {
        let handle = try openHandle("zmq_bind")
        if endpoint.hasPrefix("tcp://[") { try set(.ipv6, true) }  // libzmq refuses IPv6 addresses without it
        try zmqCall("zmq_bind", detail: endpoint) { zmq_bind(handle, endpoint) }
        return try lastEndpoint
    }

    /// Connects to `endpoint`; the connection is made (and remade) in the background.
    public func connect(_ endpoint: String) throws(ZMQError) {
        let handle = try openHandle("zmq_connect")
        if endpoint.hasPrefix("tcp://[") { try set(.ipv6, true) }  // libzmq refuses IPv6 addresses without it
        try zmqCall("zmq_connect", detail: endpoint) { zmq_connect(handle, endpoint) }
    }

    /// Stops listening on `endpoint`, as returned by ``bind(_:)``.
    public func unbind(_ endpoint: String) throws(ZMQError) {
        let handle = try openHandle("zmq_unbind")
        try zmqCall("zmq_unbind", detail: endpoint) { zmq_unbind(handle, endpoint) }
    }

    /// Drops the connection to `endpoint` made by ``connect(_:)``.
    public func disconnect(_ endpoint: String) throws(ZMQError) {
        let handle = try openHandle("zmq_disconnect")
        try zmqCall("zmq_disconnect", detail: endpoint) { zmq_disconnect(handle, endpoint) }
    }

    /// The last endpoint bound or connected (`ZMQ_LAST_ENDPOINT`), empty if none.
    public var lastEndpoint: String {
        get throws(ZMQError) { try get(.lastEndpoint) }
    }

    /// The file descriptor (`ZMQ_FD`) that becomes readable when ``events`` may have changed.
    ///
    /// It is edge-triggered and signals *any* change: after it fires, read ``events`` and drain the
    /// socket until it no longer reports `.readable` before waiting on the descriptor again.
    public var fileDescriptor: Int32 {
        get throws(ZMQError) { try get(.fileDescriptor) }
    }

    /// Whether a message can be received or sent without blocking now (`ZMQ_EVENTS`).
    public var events: PollEvents {
        get throws(ZMQError) { PollEvents(rawValue: Int16(truncatingIfNeeded: try get(.events))) }
    }
}

/// A `Socket` is owned by one thread; see its documentation.
@available(*, unavailable)
extension Socket: Sendable {}
