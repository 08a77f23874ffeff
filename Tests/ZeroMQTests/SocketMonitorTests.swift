import Foundation
import Testing
import ZeroMQ

@Suite("Socket monitor", .enabled(if: CurveKeyPair.isSupported, "libzmq without CURVE"))
struct SocketMonitorTests {
    @Test("A CURVE client with the wrong server key sees its handshake fail; nobody listening is no refusal")
    func handshakeFailureIsSeen() throws {
        let context = try Context()
        defer { context.close() }
        let serverKeys = try CurveKeyPair.generate()
        let (server, endpoint) = try boundRouter(context) { try $0.setCurveServer(serverKeys) }
        defer { server.close() }
        let client = try context.socket(.dealer)
        defer { client.close() }
        try client.setCurveClient(CurveKeyPair.generate(), serverKey: CurveKeyPair.generate().publicKey)
        let watch = try HandshakeWatch(client)
        defer { watch.close() }
        try client.connect(endpoint)
        let deadline = ContinuousClock.now + patience
        var poller = Poller()
        try poller.add(watch.eventSocket)
        while watch.refusalSoFar() == nil, ContinuousClock.now < deadline {
            try poller.poll(timeout: 100)
        }
        #expect(watch.refusalSoFar() == .handshakeFailed)

        let lonely = try context.socket(.dealer)
        defer { lonely.close() }
        try lonely.setCurveClient(CurveKeyPair.generate(), serverKey: serverKeys.publicKey)
        let nobody = try HandshakeWatch(lonely)
        defer { nobody.close() }
        try lonely.connect("tcp://127.0.0.1:1")
        #expect(nobody.refusalSoFar() == nil)
    }

    /// libzmq's monitor sends its events with a blocking send from the I/O thread: had the monitor's
    /// queue a limit, a connection that failed a thousand handshakes unread would stall that thread and
    /// every connection of the context with it. The server counts the client's failed handshakes while
    /// the client's own monitor is never read.
    @Test("An unread monitor never stalls its socket's connections")
    func unreadMonitorNeverStalls() throws {
        let context = try Context()
        defer { context.close() }
        let (server, endpoint) = try boundRouter(context) { try $0.setCurveServer(CurveKeyPair.generate()) }
        defer { server.close() }
        let serverEvents = try server.monitor(.handshakeFailedProtocol)
        defer { serverEvents.close() }
        let client = try context.socket(.dealer)
        defer { client.close() }
        try client.set(.reconnectInterval, 1)
        try client.setCurveClient(CurveKeyPair.generate(), serverKey: CurveKeyPair.generate().publicKey)
        let unread = try HandshakeWatch(client)
        defer { unread.close() }
        try client.connect(endpoint)

        let wanted = 1_500  // past the 1,000 handshakes (2,000 events) a default-sized queue takes
        var failures = 0
        let deadline = ContinuousClock.now + .seconds(60)
        var poller = Poller()
        try poller.add(serverEvents.socket)
        while failures < wanted, ContinuousClock.now < deadline {
            try poller.poll(timeout: 100)
            failures += try serverEvents.drain().count
        }
        #expect(failures >= wanted, "the client stopped reconnecting after \(failures) failed handshakes")
        #expect(unread.refusalSoFar() == .handshakeFailed)
    }
}
