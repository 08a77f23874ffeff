/// Why a CURVE server did not accept a client connection, as the client socket's monitor saw the
/// handshake.
public enum KeyRefusal: Sendable, Hashable {
    /// The server's ZAP authenticator refused this key (its status, e.g. 400); for the coordinator: the
    /// key is not in the directory of keys authorized for that endpoint.
    case refused(status: UInt32)
    /// The handshake broke off before authentication: the server key is not that server's.
    case handshakeFailed
    /// The server does not speak CURVE (e.g. a coordinator started without `--curve-key`).
    case notCurve
}

/// Reads a CURVE client socket's monitor to tell a refused key from a server that is not there: a TCP
/// connection whose handshake failed means the server answered and did not accept the key; no
/// connection at all means nobody answered. Create it before the socket connects; use it from the
/// thread that owns it (like a socket).
public final class HandshakeWatch {
    private let monitor: SocketMonitor
    /// The refusal seen so far (the first one sticks: libzmq does not retry a refused key).
    private var refusal: KeyRefusal?

    /// The socket the monitor's events arrive on (to wait for them with a ``Poller``).
    public var eventSocket: Socket { monitor.socket }

    /// Starts watching `socket`'s handshakes.
    public init(_ socket: Socket) throws(ZMQError) {
        monitor = try socket.monitor(.handshake)
    }

    /// Why the server did not accept this connection, reading the events that arrived since the last
    /// call; nil when no handshake failed (nobody answered, or the server accepted the key).
    public func refusalSoFar() -> KeyRefusal? {
        while refusal == nil, let event = try? monitor.next() {
            switch event.kind {
            case .handshakeFailedAuth: refusal = .refused(status: event.value)
            case .handshakeFailedNoDetail, .handshakeFailedProtocol: refusal = event.isMechanismMismatch ? .notCurve : .handshakeFailed
            default: break
            }
        }
        return refusal
    }

    /// Closes the monitor's socket.
    public func close() { monitor.close() }
}
