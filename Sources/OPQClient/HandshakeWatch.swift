import ZeroMQ

/// Why the coordinator did not accept a CURVE connection, as its socket monitor saw the handshake.
public enum KeyRefusal: Sendable, Hashable {
    /// The coordinator's authenticator refused this key (the ZAP status, e.g. 400): it is not in the
    /// directory of keys authorized for that endpoint.
    case refused(status: UInt32)
    /// The handshake broke off before authentication: the server key is not that coordinator's.
    case handshakeFailed
    /// The peer does not speak CURVE (a coordinator started without `--curve-key`, or something else).
    case notCurve
}

/// Reads a CURVE client socket's monitor to tell a refused key from a coordinator that is not there:
/// a TCP connection whose handshake failed means the coordinator answered and did not accept the key;
/// no connection at all means nobody answered. Create it before the socket connects; use it from one
/// thread at a time.
final class HandshakeWatch {
    private let monitor: SocketMonitor
    /// The refusal seen so far (the first one sticks: libzmq does not retry a refused key).
    private var refusal: KeyRefusal?

    /// Starts watching `socket`'s handshakes.
    init(_ socket: Socket) throws(ZMQError) {
        monitor = try socket.monitor(.handshake)
    }

    /// Why the coordinator did not accept this connection, reading the events that arrived since the
    /// last call; nil when no handshake failed (no coordinator answered, or it accepted the key).
    func refusalSoFar() -> KeyRefusal? {
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
    func close() { monitor.close() }
}
