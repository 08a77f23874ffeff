import Foundation
import Testing
import ZeroMQ

@Suite("Endpoints and options")
struct EndpointTests {
    @Test("Binding tcp://127.0.0.1:* returns the real port")
    func bindEphemeralPort() throws {
        let context = try Context()
        defer { context.close() }
        let socket = try context.socket(.router)
        defer { socket.close() }
        let endpoint = try socket.bind("tcp://127.0.0.1:*")
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        let port = try #require(Int(endpoint.split(separator: ":").last ?? ""))
        #expect(port > 0 && port < 65536)
        #expect(try socket.lastEndpoint == endpoint)
        try socket.unbind(endpoint)
    }

    @Test("Bad endpoints give typed errors that name the call and the endpoint")
    func badEndpoints() throws {
        let context = try Context()
        defer { context.close() }
        let socket = try context.socket(.router)
        defer { socket.close() }

        let bad = #expect(throws: ZMQError.self) { try socket.bind("tcp://not an endpoint") }
        #expect(bad?.call.description == "zmq_bind")
        #expect(bad?.description.hasPrefix("zmq_bind(tcp://not an endpoint) failed: ") == true)
        let unknown = #expect(throws: ZMQError.self) { try socket.connect("carrier-pigeon://home") }
        #expect(unknown?.call.description == "zmq_connect")
        #expect(unknown?.kind == .other)

        let endpoint = try socket.bind("tcp://127.0.0.1:*")
        let other = try context.socket(.router)
        defer { other.close() }
        let inUse = #expect(throws: ZMQError.self) { try other.bind(endpoint) }
        #expect(inUse?.code == EADDRINUSE)
    }

    @Test("Options read back what was set; sockets start with LINGER 0")
    func options() throws {
        let context = try Context()
        defer { context.close() }
        let socket = try context.socket(.dealer)
        defer { socket.close() }
        #expect(try socket.get(.linger) == 0)
        try socket.set(.routingID, bytes("worker-7"))
        #expect(try socket.get(.routingID) == bytes("worker-7"))
        try socket.set(.sendHWM, 123)
        #expect(try socket.get(.sendHWM) == 123)
        try socket.set(.immediate, true)
        #expect(try socket.get(.immediate))
        try socket.set(.heartbeatInterval, 1000)
        try socket.set(.heartbeatTimeout, 3000)
        try socket.set(.heartbeatTTL, 3000)
        #expect(try socket.get(.heartbeatInterval) == 1000)
        try socket.set(.reconnectInterval, 1000)
        try socket.set(.reconnectIntervalMax, 32000)
        try socket.set(.receiveTimeout, 10)
        #expect(try socket.receiveMultipart() == nil)  // timed out
        #expect(try socket.fileDescriptor >= 0)
    }
}
