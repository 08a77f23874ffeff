import ZeroMQ

/// How a client's connection to a coordinator is secured.
///
/// Without keys a coordinator listens on loopback TCP or `ipc://` only, without encryption (`.none`).
/// A coordinator started with CURVE keys (`opq-coordinator --curve-key`) encrypts its endpoints and
/// admits only the client keys in its `--authorized-clients` directory: connect with
/// ``curve(serverKey:clientKeys:)``, or ``fromEnvironment(serverKeyFile:clientKeyFile:)`` to read the
/// keys the way the `opq` command does. A key it does not accept gives
/// ``ClientError/keyNotAccepted(endpoint:seconds:reason:)`` within the connect timeout, saying why.
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

    /// CURVE when a server key is given (`serverKeyFile`, else `$OPQ_SERVER_KEY`), with this client's
    /// key pair from `clientKeyFile`, else `$OPQ_CURVE_SECRET_KEY`; `.none` without a server key.
    public static func fromEnvironment(
        serverKeyFile: String? = nil, clientKeyFile: String? = nil, environment: [String: String]
    ) throws(CurveKeyError) -> ConnectionSecurity {
        guard let serverKey = try CurveKeys.serverKey(file: serverKeyFile, environment: environment) else { return .none }
        return .curve(serverKey: serverKey, clientKeys: try CurveKeys.ownKeys(file: clientKeyFile, environment: environment))
    }

    /// Whether this is CURVE.
    var isCurve: Bool { if case .curve = mode { true } else { false } }

    /// Sets the socket options for this mode on `socket`, before it connects.
    func apply(to socket: Socket) throws(ZMQError) {
        guard case let .curve(serverKey, clientKeys) = mode else { return }
        let keys: CurveKeyPair
        if let clientKeys { keys = clientKeys } else { keys = try CurveKeyPair.generate() }
        try socket.setCurveClient(keys, serverKey: serverKey)
    }
}
