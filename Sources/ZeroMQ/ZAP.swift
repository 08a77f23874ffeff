/// One ZAP request (RFC 27, ZeroMQ Authentication Protocol 1.0): libzmq asks whether a peer that
/// completed a security handshake on a socket of the same context may connect.
///
/// A handler binds a REP socket to ``ZAP/endpoint``; each request is the frames version (`1.0`),
/// request id, domain (the socket's ``SocketOption/zapDomain``), peer address, routing id, mechanism
/// (`NULL`, `PLAIN`, `CURVE`) and the mechanism's credentials (CURVE: the client's 32-byte public key).
public struct ZAPRequest: Sendable, Equatable {
    public let requestID: [UInt8]
    public let domain: String
    public let address: String
    public let mechanism: String
    /// The client's public key in Z85, for `CURVE`; nil otherwise.
    public let curvePublicKey: String?

    /// Parses a request's frames; nil for anything that is not ZAP 1.0.
    public init?(frames: [[UInt8]]) {
        guard frames.count >= 6, frames[0] == Array(ZAP.version.utf8) else { return nil }
        requestID = frames[1]
        domain = String(decoding: frames[2], as: UTF8.self)
        address = String(decoding: frames[3], as: UTF8.self)
        mechanism = String(decoding: frames[5], as: UTF8.self)
        curvePublicKey = mechanism == "CURVE" && frames.count >= 7 ? CurveKeyPair.z85(ofBinaryKey: frames[6]) : nil
    }

    /// The reply: status 200 (admitted, as `userID`) or 400 (refused, because `statusText`).
    public func reply(admit: Bool, statusText: String, userID: String) -> [[UInt8]] {
        [Array(ZAP.version.utf8), requestID, Array((admit ? "200" : "400").utf8), Array(statusText.utf8),
         Array(userID.utf8), []]
    }
}

/// The ZAP handler's socket: a REP socket bound to ``endpoint`` in one context. Poll ``socket`` and call
/// ``answer(_:)`` when it is readable; libzmq holds the peer's handshake until the reply.
public final class ZAP {
    /// Where libzmq sends ZAP requests (in the same context).
    public static let endpoint = "inproc://zeromq.zap.01"
    /// The protocol version spoken.
    static let version = "1.0"

    /// The REP socket (add it to a ``Poller``).
    public let socket: Socket

    /// Binds the handler in `context`; bind it before the sockets it guards accept connections.
    public init(context: Context) throws(ZMQError) {
        socket = try context.socket(.rep)
        try socket.set(.linger, 0)
        _ = try socket.bind(Self.endpoint)
    }

    /// Answers every queued request with `decide`'s verdict: (admit, status text, user id). A malformed
    /// request is refused.
    public func answer(_ decide: (ZAPRequest) -> (admit: Bool, reason: String, userID: String)) throws(ZMQError) {
        while let frames = try socket.receiveMultipart(flags: .dontWait) {
            guard let request = ZAPRequest(frames: frames) else {
                // REP must answer to receive again; the requester ignores a malformed answer.
                try socket.send([Array(Self.version.utf8), frames.count > 1 ? frames[1] : [], Array("500".utf8),
                                 Array("malformed ZAP request".utf8), [], []])
                continue
            }
            let verdict = decide(request)
            try socket.send(request.reply(admit: verdict.admit, statusText: verdict.reason, userID: verdict.userID))
        }
    }

    /// Unbinds and closes the socket.
    public func close() { socket.close() }
}
