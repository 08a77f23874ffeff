import ZeroMQ

/// How a client's connection to a coordinator is secured.
///
/// Today coordinators listen on loopback TCP or `ipc://` only, without encryption (`.none`). CURVE
/// (ZeroMQ's public-key encryption and server authentication) is the planned way to reach a coordinator
/// on another machine; ``curve(serverKey:clientKeys:)`` already configures the client's socket for it,
/// but no coordinator offers it yet, so a connection with it will not get answers until one does.
public struct ConnectionSecurity: Sendable, Hashable {
    enum Mode: Hashable {
        case none
        case curve(serverKey: String, clientKeys: CurveKeyPair?)
    }

    let mode: Mode

    /// No encryption: for `ipc://` and loopback TCP endpoints.
    public static let none = ConnectionSecurity(mode: .none)

    /// CURVE: the traffic is encrypted and the coordinator is authenticated by its public key
    /// `serverKey` (40 Z85 characters). `clientKeys` identifies this client; nil = a fresh pair.
    public static func curve(serverKey: String, clientKeys: CurveKeyPair? = nil) -> ConnectionSecurity {
        ConnectionSecurity(mode: .curve(serverKey: serverKey, clientKeys: clientKeys))
    }

    /// Sets the socket options for this mode on `socket`, before it connects.
    func apply(to socket: Socket) throws(ZMQError) {
        guard case let .curve(serverKey, clientKeys) = mode else { return }
        let keys: CurveKeyPair
        if let clientKeys { keys = clientKeys } else { keys = try CurveKeyPair.generate() }
        try socket.setCurveClient(keys, serverKey: serverKey)
    }
}
