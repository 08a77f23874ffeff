import CZeroMQ

/// A CURVE long-term key pair, as 40-character Z85 strings (what ``SocketOption/curvePublicKey``,
/// ``SocketOption/curveSecretKey`` and ``SocketOption/curveServerKey`` take).
///
/// The server publishes ``publicKey`` to its clients; ``secretKey`` stays private.
public struct CurveKeyPair: Sendable, Hashable {
    /// The public key (Z85, 40 characters).
    public let publicKey: String
    /// The secret key (Z85, 40 characters). Keep it out of logs.
    public let secretKey: String

    /// Wraps an existing pair (no check that they belong together; see ``init(secretKey:)``).
    public init(publicKey: String, secretKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// Rebuilds the pair from its secret key, deriving the public key (`zmq_curve_public`).
    ///
    /// Throws `EINVAL` for a key that is not 40 Z85 characters.
    public init(secretKey: String) throws(ZMQError) {
        guard secretKey.utf8.count == Self.z85Length else {
            throw ZMQError(call: "zmq_curve_public", code: EINVAL, detail: "secret key is not 40 Z85 characters")
        }
        var publicKey = [CChar](repeating: 0, count: Self.z85Length + 1)
        try zmqCall("zmq_curve_public") { zmq_curve_public(&publicKey, secretKey) }
        self.init(publicKey: Self.string(publicKey), secretKey: secretKey)
    }

    /// Whether libzmq was built with CURVE support (`zmq_has("curve")`).
    public static var isSupported: Bool { Context.has("curve") }

    /// Generates a fresh key pair (`zmq_curve_keypair`). Throws `ENOTSUP` without CURVE support.
    public static func generate() throws(ZMQError) -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: z85Length + 1)
        var secretKey = [CChar](repeating: 0, count: z85Length + 1)
        try zmqCall("zmq_curve_keypair") { zmq_curve_keypair(&publicKey, &secretKey) }
        return CurveKeyPair(publicKey: string(publicKey), secretKey: string(secretKey))
    }

    /// Length of a 32-byte key in Z85.
    static let z85Length = 40

    /// Whether `key` is a well-formed Z85 key: 40 characters that decode to 32 bytes (`zmq_z85_decode`).
    public static func isValidKey(_ key: String) -> Bool { binaryKey(ofZ85: key) != nil }

    /// The 32 bytes of a Z85 key; nil if `key` is not 40 Z85 characters.
    public static func binaryKey(ofZ85 key: String) -> [UInt8]? {
        guard key.utf8.count == z85Length else { return nil }
        var decoded = [UInt8](repeating: 0, count: 32)
        return zmq_z85_decode(&decoded, key) != nil ? decoded : nil
    }

    /// The Z85 text of a 32-byte binary key (as a ZAP request carries it); nil for another length.
    public static func z85(ofBinaryKey key: [UInt8]) -> String? {
        guard key.count == 32 else { return nil }
        var text = [CChar](repeating: 0, count: z85Length + 1)
        guard zmq_z85_encode(&text, key, key.count) != nil else { return nil }
        return string(text)
    }

    /// The NUL-terminated text in `chars`.
    private static func string(_ chars: [CChar]) -> String {
        String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension Socket {
    /// Makes this socket a CURVE server with `keys` (call before ``bind(_:)``): every peer must
    /// know `keys.publicKey`, and traffic is encrypted and authenticated.
    public func setCurveServer(_ keys: CurveKeyPair) throws(ZMQError) {
        try set(.curveServer, true)
        try set(.curveSecretKey, keys.secretKey)
    }

    /// Makes this socket a CURVE client of the server whose public key is `serverKey`, with its
    /// own `keys` (call before ``connect(_:)``). A wrong server key never completes the handshake.
    public func setCurveClient(_ keys: CurveKeyPair, serverKey: String) throws(ZMQError) {
        try set(.curveServerKey, serverKey)
        try set(.curvePublicKey, keys.publicKey)
        try set(.curveSecretKey, keys.secretKey)
    }
}
