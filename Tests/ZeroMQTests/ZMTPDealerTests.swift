import Foundation
import Testing
import ZeroMQ

/// ``ZMTPDealer``: ZMTP 3.1 spoken by hand, against libzmq's own ROUTER and against servers that break
/// the protocol (each written here as the bytes it sends).
@Suite struct ZMTPDealerTests {
    static let maxFrameBytes = 1 << 20

    static func dealer(_ endpoint: String) throws -> ZMTPDealer {
        try #require(ZMTPDealer(endpoint: endpoint, maxFrameBytes: maxFrameBytes, maxFrames: 16, maxMessageBytes: 2 * maxFrameBytes))
    }

    /// A fresh ipc:// path in a private directory.
    static func ipcEndpoint() throws -> (endpoint: String, directory: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-zmtp-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return ("ipc://\(directory)/s", directory)
    }

    @Test(arguments: ["ipc", "tcp"])
    func talksToLibzmqsRouter(transport: String) throws {
        let context = try Context()
        defer { context.close() }
        let router = try context.socket(.router)
        defer { router.close() }
        let (ipc, directory) = try Self.ipcEndpoint()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let endpoint = try router.bind(transport == "ipc" ? ipc : "tcp://127.0.0.1:*")

        let dealer = try Self.dealer(endpoint)
        defer { dealer.close() }
        let long = [UInt8](repeating: 7, count: 300)
        #expect(try dealer.send([bytes("a"), [], long], until: .now + patience))
        let request = try #require(try receive(router))
        #expect(request.count == 4 && Array(request.dropFirst()) == [bytes("a"), [], long], "\(request.map(\.count))")

        let big = (0..<70_000).map { UInt8(truncatingIfNeeded: $0) }
        try router.send([request[0], bytes("reply"), big])
        guard case .message(let reply) = try dealer.receive(until: .now + patience) else {
            Issue.record("no reply")
            return
        }
        #expect(reply == [bytes("reply"), big])
        // A second round trip on the same connection.
        #expect(try dealer.send([bytes("again")], until: .now + patience))
        let second = try #require(try receive(router))
        #expect(Array(second.dropFirst()) == [bytes("again")])
    }

    @Test func leavesOtherEndpointsToLibzmq() {
        for endpoint in ["tcp://localhost:7131", "tcp://10.1.2.3:7131", "tcp://[::1]:7131", "tcp://127.0.0.1:*", "inproc://x",
                         "ipc://*", "ipc://@abstract", "tcp://eth0:1", "nonsense"] {
            #expect(ZMTPDealer(endpoint: endpoint, maxFrameBytes: 1, maxFrames: 1, maxMessageBytes: 1) == nil, "\(endpoint)")
        }
        #expect(ZMTPDealer(endpoint: "tcp://127.0.0.2:7131", maxFrameBytes: 1, maxFrames: 1, maxMessageBytes: 1) != nil)
    }

    /// No peer yet is the send's deadline passing (as a libzmq DEALER waits to connect), not an error.
    @Test func noPeerIsADeadline() throws {
        let (endpoint, directory) = try Self.ipcEndpoint()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dealer = try Self.dealer(endpoint)
        let start = ContinuousClock.now
        #expect(try dealer.send([bytes("x")], until: .now + .milliseconds(300)) == false)
        #expect(ContinuousClock.now - start < patience)
    }

    // MARK: Servers that break the protocol

    static func greeting(_ mechanism: String, major: UInt8 = 3, minor: UInt8 = 1) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 64)
        bytes[0] = 0xFF
        bytes[9] = 0x7F
        bytes[10] = major
        bytes[11] = minor
        for (k, byte) in mechanism.utf8.enumerated() { bytes[12 + k] = byte }
        return bytes
    }

    static func command(_ name: String, _ data: [UInt8]) -> [UInt8] {
        let body = [UInt8(name.utf8.count)] + Array(name.utf8) + data
        return [0x04, UInt8(body.count)] + body
    }

    static func ready(_ type: String) -> [UInt8] {
        let name = Array("Socket-Type".utf8)
        let value = Array(type.utf8)
        return command("READY", [UInt8(name.count)] + name + [0, 0, 0, UInt8(value.count)] + value)
    }

    static let nullHandshake = greeting("NULL") + ready("ROUTER")

    static let cases: [(name: String, sends: [UInt8], expected: ZMTPError.Problem)] = [
        ("an HTTP server", Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8), .notZMTP),
        ("ZMTP 2.0", Array(greeting("NULL").prefix(10)) + [1, 5], .version(major: 1, minor: 5)),
        ("a CURVE coordinator", greeting("CURVE"), .mechanism("CURVE")),
        ("PLAIN", greeting("PLAIN"), .mechanism("PLAIN")),
        ("an ERROR command", greeting("NULL") + command("ERROR", [14] + Array("Not authorized".utf8)), .refused(reason: "Not authorized")),
        ("an ERROR after READY", nullHandshake + command("ERROR", [3] + Array("bye".utf8)), .refused(reason: "bye")),
        ("a PUB socket", greeting("NULL") + ready("PUB"), .socketType("PUB")),
        ("a frame of 2^63 bytes", nullHandshake + [0x02, 0x80, 0, 0, 0, 0, 0, 0, 0], .frameTooLarge(bytes: 1 << 63, limit: maxFrameBytes)),
        ("reserved flags", nullHandshake + [0x08, 0], .malformed("reserved flag bits set (flags 0x8)")),
        ("a message before READY", greeting("NULL") + [0x00, 1, 65], .malformed("a message before READY")),
        ("too many frames", nullHandshake + Array(repeating: [UInt8]([0x01, 0]), count: 17).flatMap { $0 }, .messageTooLarge(limit: 16)),
        ("a close in the signature", Array(greeting("NULL").prefix(5)), .closed(during: "during the ZMTP greeting")),
        // libzmq wanting CURVE sends its signature, reads the NULL greeting, and closes.
        ("a close after the signature", Array(greeting("CURVE").prefix(10)), .nullRefused),
        ("a close in a frame", nullHandshake + [0x00, 10, 1, 2, 3], .closed(during: "in the middle of a message")),
    ]

    /// Each server sends its bytes and closes; the dealer reports what happened, within bounded time.
    @Test(arguments: cases.indices)
    func aBrokenServerIsReportedByName(index: Int) throws {
        let (name, sends, expected) = Self.cases[index]
        let server = try ScriptedServer(sends: sends, thenClose: true)
        defer { server.stop() }
        let dealer = try Self.dealer(server.endpoint)
        let start = ContinuousClock.now
        do {
            _ = try dealer.send([bytes("request")], until: .now + patience)
            let received = try dealer.receive(until: .now + patience)
            Issue.record("\(name): no error but \(received)")
        } catch {
            #expect(error.problem == expected, "\(name): \(error)")
            #expect(error.description.contains(server.endpoint), "\(name): \(error)")
        }
        #expect(ContinuousClock.now - start < patience, "\(name)")
        // The connection is over: a later call says so again at once.
        #expect(throws: ZMTPError.self) { try dealer.receive(until: .now + patience) }
    }

    /// A server that stops in the middle of a frame: the wait ends at its deadline, nothing more.
    @Test func aServerThatStallsMidFrameIsADeadline() throws {
        let server = try ScriptedServer(sends: Self.nullHandshake + [0x02, 0, 0, 0, 0, 0, 0, 1, 0, 9, 9], thenClose: false)
        defer { server.stop() }
        let dealer = try Self.dealer(server.endpoint)
        #expect(try dealer.send([bytes("request")], until: .now + patience))
        let start = ContinuousClock.now
        guard case .timedOut = try dealer.receive(until: .now + .milliseconds(300)) else {
            Issue.record("a message from a stalled server")
            return
        }
        #expect(ContinuousClock.now - start < patience)
    }

    /// PING is answered with PONG carrying its context; the message after it arrives.
    @Test func pingIsAnsweredWithPong() throws {
        let ping = Self.command("PING", [0, 10] + Array("ctx".utf8))
        let server = try ScriptedServer(sends: Self.nullHandshake + ping, thenClose: false, expect: Self.command("PONG", Array("ctx".utf8)),
                                        thenSends: [0x00, 2] + Array("ok".utf8))
        defer { server.stop() }
        let dealer = try Self.dealer(server.endpoint)
        #expect(try dealer.send([bytes("request")], until: .now + patience))
        guard case .message(let message) = try dealer.receive(until: .now + patience) else {
            Issue.record("no message after the PONG")
            return
        }
        #expect(message == [bytes("ok")])
    }
}

/// A Unix-socket server that accepts one connection, reads what the client sends first, sends `sends`,
/// and closes (or, when `expect` is given, waits until those bytes came and sends `thenSends`).
final class ScriptedServer: @unchecked Sendable {
    let endpoint: String
    private let directory: String
    private let listener: Int32
    private let done: Signal

    init(sends: [UInt8], thenClose: Bool, expect: [UInt8]? = nil, thenSends: [UInt8] = []) throws {
        let (endpoint, directory) = try ZMTPDealerTests.ipcEndpoint()
        self.endpoint = endpoint
        self.directory = directory
        let path = String(endpoint.dropFirst("ipc://".count))
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { for (k, byte) in path.utf8.enumerated() { $0[k] = byte } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 1) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        self.listener = listener
        let release = Signal()
        self.release = release
        done = spawn {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4_096)
            // The client's greeting, READY and request come in one write.
            let count = read(connection, &chunk, chunk.count)
            if count > 0 { received += chunk[..<count] }
            sends.withUnsafeBytes { _ = write(connection, $0.baseAddress, $0.count) }
            if let expect {
                while !received.contains(sequence: expect) {
                    let count = read(connection, &chunk, chunk.count)
                    guard count > 0 else { return }
                    received += chunk[..<count]
                }
                thenSends.withUnsafeBytes { _ = write(connection, $0.baseAddress, $0.count) }
            }
            if !thenClose { _ = release.wait(within: patience * 2) }
        }
    }

    private let release: Signal

    /// Lets the server close its connection and waits for it.
    func stop() {
        release.fire()
        _ = done.wait()
        close(listener)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

private extension Array where Element == UInt8 {
    func contains(sequence: [UInt8]) -> Bool {
        guard sequence.count <= count else { return false }
        return (0...(count - sequence.count)).contains { Array(self[$0..<($0 + sequence.count)]) == sequence }
    }
}
