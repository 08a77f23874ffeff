import Testing
import ZeroMQ

@Suite("CURVE", .enabled(if: CurveKeyPair.isSupported, "libzmq without CURVE"))
struct CurveTests {
    @Test("Generated keys are 40-character Z85; the public key derives from the secret key")
    func keyPairs() throws {
        let keys = try CurveKeyPair.generate()
        #expect(keys.publicKey.utf8.count == 40 && keys.secretKey.utf8.count == 40)
        #expect(try CurveKeyPair(secretKey: keys.secretKey) == keys)
        #expect(throws: ZMQError.self) { try CurveKeyPair(secretKey: "short") }

        let context = try Context()
        defer { context.close() }
        let socket = try context.socket(.dealer)
        defer { socket.close() }
        try socket.set(.curveServerKey, keys.publicKey)
        #expect(try socket.get(.curveServerKey) == keys.publicKey)
        let error = #expect(throws: ZMQError.self) { try socket.set(.curvePublicKey, "not a key") }
        #expect(error?.description.contains("ZMQ_CURVE_PUBLICKEY") == true)
    }

    @Test("A client with the right server key talks; one with a wrong key never gets through")
    func handshake() throws {
        let context = try Context()
        defer { context.close() }
        let serverKeys = try CurveKeyPair.generate()
        let (server, endpoint) = try boundRouter(context) { try $0.setCurveServer(serverKeys) }
        defer { server.close() }

        let client = try connectedDealer(context, to: endpoint, id: "c1") {
            try $0.setCurveClient(CurveKeyPair.generate(), serverKey: serverKeys.publicKey)
        }
        defer { client.close() }
        try client.send([bytes("secret")])
        #expect(try receive(server) == [bytes("c1"), bytes("secret")])
        try server.send([bytes("c1"), bytes("ack")])
        #expect(try receive(client) == [bytes("ack")])

        let impostorServerKey = try CurveKeyPair.generate().publicKey
        let stranger = try connectedDealer(context, to: endpoint, id: "c2") {
            try $0.setCurveClient(CurveKeyPair.generate(), serverKey: impostorServerKey)
        }
        defer { stranger.close() }
        try stranger.send([bytes("let me in")])
        #expect(try receive(server, within: .milliseconds(500)) == nil)
    }
}
