import Foundation
import Testing
import ZeroMQ

@Suite("CURVE key files and ZAP", .enabled(if: CurveKeyPair.isSupported, "libzmq without CURVE"))
struct CurveKeysTests {
    /// A fresh temporary directory, removed by the caller.
    func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("opq-keys-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! NSNumber).intValue
    }

    @Test("A written pair reads back: public file 0644, secret file 0600, never overwritten")
    func writeAndRead() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = try CurveKeyPair.generate()
        let files = try CurveKeys.write(keys, to: directory, name: "worker")
        #expect(files.publicFile == "\(directory)/worker.public" && files.secretFile == "\(directory)/worker.secret")
        #expect(try mode(files.publicFile) == 0o644 && mode(files.secretFile) == 0o600)
        #expect(try CurveKeys.readSecretKey(file: files.secretFile) == keys)
        #expect(try CurveKeys.readPublicKey(file: files.publicFile) == keys.publicKey)
        #expect(try CurveKeys.publicKeys(in: directory) == [keys.publicKey], "only *.public files count")
        let again = #expect(throws: CurveKeyError.self) { try CurveKeys.write(CurveKeyPair.generate(), to: directory, name: "worker") }
        #expect(again?.description.contains("exists") == true)
        #expect(try CurveKeys.readSecretKey(file: files.secretFile) == keys, "the first pair is intact")
    }

    @Test("A secret key file that group or others can read is refused, naming the file and the chmod to run")
    func looseSecretFileIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try CurveKeys.write(CurveKeyPair.generate(), to: directory, name: "client")
        for loose in [0o640, 0o604, 0o644] {
            chmod(files.secretFile, mode_t(loose))
            let error = #expect(throws: CurveKeyError.self) { try CurveKeys.readSecretKey(file: files.secretFile) }
            #expect(error?.description.contains(files.secretFile) == true)
            #expect(error?.description.contains("chmod 600 \(files.secretFile)") == true, "\(error.map { "\($0)" } ?? "")")
        }
        chmod(files.secretFile, 0o400)
        #expect(throws: Never.self) { try CurveKeys.readSecretKey(file: files.secretFile) }
    }

    @Test("Garbage, a missing file and a public key where a secret key belongs are clear errors")
    func badKeyFiles() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let garbage = "\(directory)/garbage.public"
        FileManager.default.createFile(atPath: garbage, contents: Data("not a key\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect((#expect(throws: CurveKeyError.self) { try CurveKeys.readPublicKey(file: garbage) })?.description
            .contains("does not hold a CURVE public key") == true)
        #expect((#expect(throws: CurveKeyError.self) { try CurveKeys.publicKeys(in: directory) })?.description
            .contains(garbage) == true, "a bad file in an authorized directory is named")
        #expect((#expect(throws: CurveKeyError.self) { try CurveKeys.readSecretKey(file: "\(directory)/absent") })?.description
            .contains("\(directory)/absent") == true)
        #expect(throws: CurveKeyError.self) { try CurveKeys.publicKeys(in: "\(directory)/absent") }
    }

    @Test("Keys come from the environment when no file is given; a file wins over the variable")
    func environment() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let own = try CurveKeyPair.generate(), server = try CurveKeyPair.generate()
        let environment = [CurveKeys.secretKeyVariable: own.secretKey + "\n", CurveKeys.serverKeyVariable: server.publicKey]
        #expect(try CurveKeys.ownKeys(file: nil, environment: environment) == own)
        #expect(try CurveKeys.serverKey(file: nil, environment: environment) == server.publicKey)
        #expect(try CurveKeys.ownKeys(file: nil, environment: [:]) == nil)
        #expect(try CurveKeys.serverKey(file: nil, environment: [:]) == nil)
        let files = try CurveKeys.write(CurveKeyPair.generate(), to: directory, name: "file")
        #expect(try CurveKeys.ownKeys(file: files.secretFile, environment: environment) != own)
        let error = #expect(throws: CurveKeyError.self) { try CurveKeys.serverKey(file: nil, environment: [CurveKeys.serverKeyVariable: "short"]) }
        #expect(error?.description.contains("OPQ_SERVER_KEY") == true)
    }

    @Test("A ZAP handler admits a listed key with its user id on every message, and refuses another")
    func zapHandler() throws {
        let context = try Context()
        defer { context.close() }
        let zap = try ZAP(context: context)
        defer { zap.close() }
        let serverKeys = try CurveKeyPair.generate(), allowed = try CurveKeyPair.generate()
        let (server, endpoint) = try boundRouter(context) {
            try $0.setCurveServer(serverKeys)
            try $0.set(.zapDomain, "test-domain")
        }
        defer { server.close() }
        var requests: [ZAPRequest] = []
        func admit(_ request: ZAPRequest) -> (admit: Bool, reason: String, userID: String) {
            requests.append(request)
            return request.curvePublicKey == allowed.publicKey ? (true, "OK", "user-\(request.curvePublicKey!)") : (false, "no", "")
        }
        /// Serves ZAP until `server` has a message or the deadline passes.
        func serve(within seconds: Double) throws -> (frames: [[UInt8]], property: String?)? {
            var poller = Poller()
            let zapItem = try poller.add(zap.socket)
            _ = try poller.add(server)
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                try poller.poll(timeout: Int(deadline.timeIntervalSinceNow * 1000) + 1)
                if poller.isReadable(zapItem) { try zap.answer(admit) }
                if let message = try server.receiveMultipart(flags: .dontWait, property: .userID) { return message }
            }
            return nil
        }

        let stranger = try connectedDealer(context, to: endpoint, id: "s") { try $0.setCurveClient(CurveKeyPair.generate(), serverKey: serverKeys.publicKey) }
        defer { stranger.close() }
        try stranger.send([bytes("let me in")])
        #expect(try serve(within: 1) == nil)
        #expect(requests.count >= 1 && requests.allSatisfy { $0.domain == "test-domain" && $0.mechanism == "CURVE" })

        let friend = try connectedDealer(context, to: endpoint, id: "f") { try $0.setCurveClient(allowed, serverKey: serverKeys.publicKey) }
        defer { friend.close() }
        try friend.send([bytes("hello")])
        let received = try #require(try serve(within: 5))
        #expect(received.frames == [bytes("f"), bytes("hello")])
        #expect(received.property == "user-\(allowed.publicKey)")
    }

    @Test("ZAP requests parse (CURVE key as Z85) and replies carry the status, text and user id")
    func zapFrames() throws {
        let keys = try CurveKeyPair.generate()
        let binary = try #require(CurveKeyPair.binaryKey(ofZ85: keys.publicKey))
        let frames = [bytes("1.0"), bytes("7"), bytes("d"), bytes("10.0.0.2"), bytes("id"), bytes("CURVE"), binary]
        let request = try #require(ZAPRequest(frames: frames))
        #expect(request.curvePublicKey == keys.publicKey && request.domain == "d" && request.address == "10.0.0.2")
        #expect(request.reply(admit: false, statusText: "no", userID: "") == [bytes("1.0"), bytes("7"), bytes("400"), bytes("no"), [], []])
        #expect(ZAPRequest(frames: [bytes("2.0")] + frames.dropFirst()) == nil)
    }
}
