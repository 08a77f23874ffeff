import CZeroMQ

/// A typed socket option: the `ZMQ_*` constant and the Swift type of its value.
///
/// ```swift
/// try socket.set(.routerMandatory, true)
/// try socket.set(.maxMessageSize, 16 << 20)
/// let id = try socket.get(.routingID)
/// ```
/// Durations are in milliseconds. Options not listed here can be made with ``init(_:name:capacity:)``.
public struct SocketOption<Value: SocketOptionValue>: Sendable {
    /// The `ZMQ_*` option constant.
    public let code: Int32
    /// The option's C name, used in errors.
    public let name: StaticString
    /// Buffer size used when reading a variable-length value.
    public let capacity: Int

    /// Describes option `code` (named `name` in errors); `capacity` bounds variable-length reads.
    public init(_ code: Int32, name: StaticString, capacity: Int = 256) {
        self.code = code
        self.name = name
        self.capacity = capacity
    }
}

extension SocketOption where Value == Bool {
    /// `ZMQ_ROUTER_MANDATORY`: sending to an unknown routing id reports `.hostUnreachable`
    /// instead of dropping the message silently.
    public static var routerMandatory: Self { .init(ZMQ_ROUTER_MANDATORY, name: "ZMQ_ROUTER_MANDATORY") }
    /// `ZMQ_ROUTER_HANDOVER`: a new peer with an already-used routing id takes it over.
    public static var routerHandover: Self { .init(ZMQ_ROUTER_HANDOVER, name: "ZMQ_ROUTER_HANDOVER") }
    /// `ZMQ_IMMEDIATE`: queue messages only to completed connections.
    public static var immediate: Self { .init(ZMQ_IMMEDIATE, name: "ZMQ_IMMEDIATE") }
    /// `ZMQ_IPV6`: TCP endpoints may use IPv6 addresses (`[::1]`, names resolving to IPv6). Off by
    /// default in libzmq: without it a v6 address fails to bind or connect.
    public static var ipv6: Self { .init(ZMQ_IPV6, name: "ZMQ_IPV6") }
    /// `ZMQ_CURVE_SERVER`: act as CURVE server (set ``curveSecretKey`` too).
    public static var curveServer: Self { .init(ZMQ_CURVE_SERVER, name: "ZMQ_CURVE_SERVER") }
}

extension SocketOption where Value == Int32 {
    /// `ZMQ_SNDHWM`: messages queued per peer before sends block or drop.
    public static var sendHWM: Self { .init(ZMQ_SNDHWM, name: "ZMQ_SNDHWM") }
    /// `ZMQ_RCVHWM`: messages queued per peer before the peer is throttled.
    public static var receiveHWM: Self { .init(ZMQ_RCVHWM, name: "ZMQ_RCVHWM") }
    /// `ZMQ_BACKLOG`: the listen queue of a TCP or IPC bind: connections not yet accepted (libzmq's
    /// default, 100, overflows when thousands of peers connect at once; the kernel caps it at
    /// `net.core.somaxconn`). Set before `bind`.
    public static var backlog: Self { .init(ZMQ_BACKLOG, name: "ZMQ_BACKLOG") }
    /// `ZMQ_LINGER` (ms): how long close waits for unsent messages; `0` (the default here) drops them.
    public static var linger: Self { .init(ZMQ_LINGER, name: "ZMQ_LINGER") }
    /// `ZMQ_SNDTIMEO` (ms): a blocking send gives up with `.wouldBlock` after this; `-1` never.
    public static var sendTimeout: Self { .init(ZMQ_SNDTIMEO, name: "ZMQ_SNDTIMEO") }
    /// `ZMQ_RCVTIMEO` (ms): a blocking receive returns `nil` after this; `-1` never.
    public static var receiveTimeout: Self { .init(ZMQ_RCVTIMEO, name: "ZMQ_RCVTIMEO") }
    /// `ZMQ_TCP_KEEPALIVE`: `1` turns on the kernel's TCP keepalive (`SO_KEEPALIVE`), `0` off, `-1` the
    /// system default. Notices a vanished TCP peer without writing to the connection from libzmq (unlike
    /// `ZMQ_HEARTBEAT_IVL`, see docs/known-issues.md). Set before `bind`/`connect`.
    public static var tcpKeepalive: Self { .init(ZMQ_TCP_KEEPALIVE, name: "ZMQ_TCP_KEEPALIVE") }
    /// `ZMQ_TCP_KEEPALIVE_IDLE` (s): idle time before the first keepalive probe (`TCP_KEEPIDLE`).
    public static var tcpKeepaliveIdle: Self { .init(ZMQ_TCP_KEEPALIVE_IDLE, name: "ZMQ_TCP_KEEPALIVE_IDLE") }
    /// `ZMQ_TCP_KEEPALIVE_INTVL` (s): time between keepalive probes (`TCP_KEEPINTVL`).
    public static var tcpKeepaliveInterval: Self { .init(ZMQ_TCP_KEEPALIVE_INTVL, name: "ZMQ_TCP_KEEPALIVE_INTVL") }
    /// `ZMQ_TCP_KEEPALIVE_CNT`: unanswered probes before the connection is dropped (`TCP_KEEPCNT`).
    public static var tcpKeepaliveCount: Self { .init(ZMQ_TCP_KEEPALIVE_CNT, name: "ZMQ_TCP_KEEPALIVE_CNT") }
    /// `ZMQ_HEARTBEAT_IVL` (ms): send a ZMTP PING this often; `0` disables. Not on a ROUTER whose peers
    /// may flood it: libzmq 4.3.4 aborts (`!_io_error`) when the timer fires on a connection that hung up
    /// with a full pipe (docs/known-issues.md).
    public static var heartbeatInterval: Self { .init(ZMQ_HEARTBEAT_IVL, name: "ZMQ_HEARTBEAT_IVL") }
    /// `ZMQ_HEARTBEAT_TIMEOUT` (ms): drop the connection if no traffic arrives this long after a PING.
    public static var heartbeatTimeout: Self {
        .init(ZMQ_HEARTBEAT_TIMEOUT, name: "ZMQ_HEARTBEAT_TIMEOUT")
    }
    /// `ZMQ_HEARTBEAT_TTL` (ms, 100 ms granularity): the peer drops us after this without traffic.
    public static var heartbeatTTL: Self { .init(ZMQ_HEARTBEAT_TTL, name: "ZMQ_HEARTBEAT_TTL") }
    /// `ZMQ_RECONNECT_IVL` (ms): first delay before reconnecting; `-1` disables reconnection.
    public static var reconnectInterval: Self { .init(ZMQ_RECONNECT_IVL, name: "ZMQ_RECONNECT_IVL") }
    /// `ZMQ_RECONNECT_IVL_MAX` (ms): the reconnect delay doubles up to this; `0` keeps it fixed.
    public static var reconnectIntervalMax: Self {
        .init(ZMQ_RECONNECT_IVL_MAX, name: "ZMQ_RECONNECT_IVL_MAX")
    }
    /// `ZMQ_HANDSHAKE_IVL` (ms): a connection whose security handshake is not done by then is dropped; `0` never.
    public static var handshakeInterval: Self { .init(ZMQ_HANDSHAKE_IVL, name: "ZMQ_HANDSHAKE_IVL") }
    /// `ZMQ_FD` (read-only); see ``Socket/fileDescriptor``.
    static var fileDescriptor: Self { .init(ZMQ_FD, name: "ZMQ_FD") }
    /// `ZMQ_EVENTS` (read-only); see ``Socket/events``.
    static var events: Self { .init(ZMQ_EVENTS, name: "ZMQ_EVENTS") }
}

extension SocketOption where Value == Int64 {
    /// `ZMQ_MAXMSGSIZE` (bytes): a peer sending a larger message is disconnected; `-1` no limit.
    public static var maxMessageSize: Self { .init(ZMQ_MAXMSGSIZE, name: "ZMQ_MAXMSGSIZE") }
}

extension SocketOption where Value == [UInt8] {
    /// `ZMQ_ROUTING_ID`: this socket's identity as seen by a ROUTER peer (1–255 bytes, set before
    /// connecting; must not start with a zero byte).
    public static var routingID: Self { .init(ZMQ_ROUTING_ID, name: "ZMQ_ROUTING_ID", capacity: 255) }
    /// `ZMQ_SUBSCRIBE` (SUB, write-only): receive messages starting with this prefix; empty = all.
    public static var subscribe: Self { .init(ZMQ_SUBSCRIBE, name: "ZMQ_SUBSCRIBE") }
    /// `ZMQ_UNSUBSCRIBE` (SUB, write-only): undo one ``subscribe``.
    public static var unsubscribe: Self { .init(ZMQ_UNSUBSCRIBE, name: "ZMQ_UNSUBSCRIBE") }
}

extension SocketOption where Value == String {
    /// `ZMQ_CURVE_PUBLICKEY`: this client's long-term public key (40-character Z85).
    public static var curvePublicKey: Self { curveKey(ZMQ_CURVE_PUBLICKEY, "ZMQ_CURVE_PUBLICKEY") }
    /// `ZMQ_CURVE_SECRETKEY`: this socket's long-term secret key (40-character Z85).
    public static var curveSecretKey: Self { curveKey(ZMQ_CURVE_SECRETKEY, "ZMQ_CURVE_SECRETKEY") }
    /// `ZMQ_CURVE_SERVERKEY`: the server's public key a client expects (40-character Z85).
    public static var curveServerKey: Self { curveKey(ZMQ_CURVE_SERVERKEY, "ZMQ_CURVE_SERVERKEY") }
    /// `ZMQ_ZAP_DOMAIN`: the domain a CURVE server's ZAP requests name, so one ZAP handler can tell
    /// its sockets apart (set before ``Socket/bind(_:)``).
    public static var zapDomain: Self { .init(ZMQ_ZAP_DOMAIN, name: "ZMQ_ZAP_DOMAIN") }
    /// `ZMQ_LAST_ENDPOINT` (read-only); see ``Socket/lastEndpoint``.
    static var lastEndpoint: Self { .init(ZMQ_LAST_ENDPOINT, name: "ZMQ_LAST_ENDPOINT", capacity: 1024) }

    /// Curve keys read back as Z85 only with a 41-byte buffer (40 characters + NUL).
    private static func curveKey(_ code: Int32, _ name: StaticString) -> Self {
        .init(code, name: name, capacity: 41)
    }
}

extension Socket {
    /// Sets `option` to `value` (`zmq_setsockopt`). Most options apply to later bind/connect calls.
    public func set<Value>(_ option: SocketOption<Value>, _ value: Value) throws(ZMQError) {
        let handle = try openHandle("zmq_setsockopt")
        _ = try value.withOptionBytes { bytes throws(ZMQError) in
            try zmqCall("zmq_setsockopt", detail: option.name.description) {
                zmq_setsockopt(handle, option.code, bytes.baseAddress, bytes.count)
            }
        }
    }

    /// Reads `option` (`zmq_getsockopt`).
    public func get<Value>(_ option: SocketOption<Value>) throws(ZMQError) -> Value {
        let handle = try openHandle("zmq_getsockopt")
        return try Value.readOption(capacity: option.capacity) { buffer, size throws(ZMQError) in
            try zmqCall("zmq_getsockopt", detail: option.name.description) {
                zmq_getsockopt(handle, option.code, buffer, &size)
            }
        }
    }
}
