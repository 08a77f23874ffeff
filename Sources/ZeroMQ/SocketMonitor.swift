import CZeroMQ

/// One thing libzmq reports about a socket's connections (`zmq_socket_monitor`): a TCP connection
/// made, a handshake that failed or succeeded, a disconnect…
public struct SocketEvent: Sendable, Hashable {
    /// Kinds of event (`ZMQ_EVENT_*`); a set of them chooses what a ``SocketMonitor`` reports.
    public struct Kinds: OptionSet, Sendable, Hashable {
        /// The `ZMQ_EVENT_*` bits.
        public let rawValue: UInt16

        /// Wraps `ZMQ_EVENT_*` bits.
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        /// A connection to the peer was made (TCP connected; the handshake follows).
        public static let connected = Kinds(rawValue: UInt16(ZMQ_EVENT_CONNECTED))
        /// A connection attempt is in progress (value: the errno of the delay).
        public static let connectDelayed = Kinds(rawValue: UInt16(ZMQ_EVENT_CONNECT_DELAYED))
        /// A reconnection was scheduled (value: the interval in milliseconds).
        public static let connectRetried = Kinds(rawValue: UInt16(ZMQ_EVENT_CONNECT_RETRIED))
        /// A connection was closed.
        public static let disconnected = Kinds(rawValue: UInt16(ZMQ_EVENT_DISCONNECTED))
        /// The handshake failed without a reason from the peer (value: the errno, e.g. the peer
        /// closed the connection): for a CURVE client, typically a server key that is not the server's.
        public static let handshakeFailedNoDetail = Kinds(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL))
        /// The handshake (and authentication) succeeded.
        public static let handshakeSucceeded = Kinds(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_SUCCEEDED))
        /// The peer broke the protocol during the handshake (value: a `ZMQ_PROTOCOL_ERROR_*` code),
        /// e.g. a mechanism mismatch (CURVE against a server without it).
        public static let handshakeFailedProtocol = Kinds(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL))
        /// The peer's ZAP handler refused this socket's credentials (value: the ZAP status code, e.g. 400).
        public static let handshakeFailedAuth = Kinds(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH))
        /// The handshake events and ``connected``: what tells why a connection gets nowhere.
        public static let handshake: Kinds = [.connected, .handshakeFailedNoDetail, .handshakeSucceeded,
                                              .handshakeFailedProtocol, .handshakeFailedAuth]
    }

    /// What happened (one bit of ``Kinds``).
    public let kind: Kinds
    /// The event's value (see each kind).
    public let value: UInt32
    /// The endpoint it happened on, as libzmq names it.
    public let endpoint: String

    /// Whether this is a protocol failure because the peers use different security mechanisms
    /// (`ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH`: e.g. CURVE against a server without it).
    public var isMechanismMismatch: Bool {
        kind == .handshakeFailedProtocol && value == UInt32(ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
    }
}

/// The events libzmq reports about one socket, read from a PAIR socket connected to its monitor
/// (`zmq_socket_monitor`). Create it before the socket connects to see every event; read it from the
/// thread that owns it, like any socket.
///
/// Events queue until read, without a limit: libzmq's monitor sends them with a *blocking* send from
/// the I/O thread, so a bounded queue that filled (2,000 unread events, e.g. a long-lived connection
/// that reconnected a thousand times) would stall every connection of the context. A reader that only
/// asks now and then learns what happened first; each event costs a few dozen bytes.
public final class SocketMonitor {
    /// The PAIR socket the events arrive on (e.g. to add to a ``Poller``).
    public let socket: Socket

    /// Starts reporting `events` of `watched` (see ``Socket/monitor(_:)``).
    init(watching watched: Socket, events: SocketEvent.Kinds) throws(ZMQError) {
        var generator = SystemRandomNumberGenerator()
        let address = "inproc://opq-monitor-\(UInt64.random(in: 0...UInt64.max, using: &generator))"
        let handle = try watched.openHandle("zmq_socket_monitor")
        try zmqCall("zmq_socket_monitor", detail: address) { zmq_socket_monitor(handle, address, Int32(events.rawValue)) }
        socket = try watched.context.socket(.pair)
        do {
            try socket.set(.receiveHWM, 0)  // before connecting: the inproc pipe takes its limit then
            try socket.connect(address)
        } catch {
            socket.close()
            throw error
        }
    }

    /// The next queued event, or nil when none is queued (never waits).
    public func next() throws(ZMQError) -> SocketEvent? {
        // Two frames: 6 bytes (16-bit event, 32-bit value, native byte order), then the endpoint.
        guard let frames = try socket.receiveMultipart(flags: .dontWait) else { return nil }
        guard frames.count == 2, frames[0].count == 6 else { return nil }
        let head = frames[0]
        let kind = head.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 0, as: UInt16.self) }
        let value = head.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 2, as: UInt32.self) }
        return SocketEvent(kind: SocketEvent.Kinds(rawValue: kind), value: value,
                           endpoint: String(decoding: frames[1], as: UTF8.self))
    }

    /// Every queued event, oldest first.
    public func drain() throws(ZMQError) -> [SocketEvent] {
        var events: [SocketEvent] = []
        while let event = try next() { events.append(event) }
        return events
    }

    /// Closes the PAIR socket (libzmq stops the monitor when the watched socket closes).
    public func close() { socket.close() }

    deinit { close() }
}

extension Socket {
    /// Reports `events` of this socket to a new ``SocketMonitor`` (call before ``connect(_:)-(String)``
    /// to see every connection). One monitor per socket.
    public func monitor(_ events: SocketEvent.Kinds) throws(ZMQError) -> SocketMonitor {
        try SocketMonitor(watching: self, events: events)
    }
}
