import Foundation
import Testing
import ZeroMQ

@Suite("Endpoint parsing")
struct EndpointParsingTests {
    @Test("One plain address parses into its parts", arguments: [
        ("tcp://127.0.0.1:7130", Endpoint.Address.tcp(host: .ipv4("127.0.0.1"), port: 7130)),
        ("tcp://127.0.0.1:*", .tcp(host: .ipv4("127.0.0.1"), port: nil)),
        ("tcp://127.0.0.1:0", .tcp(host: .ipv4("127.0.0.1"), port: nil)),
        ("tcp://[::1]:7131", .tcp(host: .ipv6("::1"), port: 7131)),
        ("tcp://localhost:7131", .tcp(host: .name("localhost"), port: 7131)),
        ("ipc:///tmp/opq/clients", .ipc(path: "/tmp/opq/clients")),
        ("inproc://loop", .inproc(name: "loop")),
    ])
    func parses(_ text: String, _ address: Endpoint.Address) throws {
        let endpoint = try Endpoint(parsing: text)
        #expect(endpoint.address == address)
        #expect(try Endpoint(parsing: endpoint.description) == endpoint, "description round-trips")
    }

    @Test("every interface (0.0.0.0, [::]) parses as a plain address that is not local")
    func everyInterfaceParsesButIsNotLocal() throws {
        for text in ["tcp://0.0.0.0:7130", "tcp://[::]:7130"] {
            let endpoint = try Endpoint(parsing: text)
            #expect(try endpoint.isLocalOnly() == false, "\(text)")
        }
    }

    @Test("Anything but one plain address is refused, saying why", arguments: [
        ("tcp://127.0.0.1:0;0.0.0.0:7130", "source address"),
        ("tcp://127.0.0.1;0.0.0.0:7130", "source address"),
        ("tcp://*:7130", "every interface"),
        ("tcp://[fe80::1%eth0]:7130", "interface"),
        ("tcp://eth0;127.0.0.1:7130", "source address"),
        ("tcp://::1:7130", "brackets"),
        ("tcp://127.0.0.1", "port"),
        ("tcp://127.0.0.1:", "not a port"),
        ("tcp://127.0.0.1:65536", "not a port"),
        ("tcp://127.0.0.1:-1", "not a port"),
        ("tcp://127.0.0.1:+80", "not a port"),
        ("tcp://:7130", "host is missing"),
        ("tcp://[::1]7130", "port after"),
        ("tcp://[::1:7130", "closing"),
        ("tcp://[nonsense]:7130", "not an IPv6"),
        ("tcp://host name:7130", "neither"),
        ("tcp://a\u{0}b:7130", "NUL"),
        ("pgm://eth0;239.192.1.1:5555", "unsupported transport"),
        ("udp://127.0.0.1:7130", "unsupported transport"),
        ("127.0.0.1:7130", "unsupported transport"),
        ("ipc://", "empty"),
    ])
    func refuses(_ text: String, _ reason: String) {
        let error = #expect(throws: EndpointError.self) { try Endpoint(parsing: text) }
        #expect(error?.endpoint == text)
        #expect(error?.description.contains(reason) == true, "\(String(describing: error))")
    }

    @Test("Resolution finds every address; only loopback ones are local")
    func resolution() throws {
        #expect(try Endpoint(parsing: "tcp://127.0.0.1:1").isLocalOnly())
        #expect(try Endpoint(parsing: "tcp://127.1.2.3:1").isLocalOnly())
        #expect(try Endpoint(parsing: "tcp://[::1]:1").isLocalOnly())
        #expect(try Endpoint(parsing: "tcp://[::ffff:127.0.0.1]:1").isLocalOnly())
        #expect(try Endpoint(parsing: "tcp://localhost:1").isLocalOnly())
        #expect(try Endpoint(parsing: "ipc:///tmp/x").isLocalOnly())
        #expect(try !Endpoint(parsing: "tcp://10.0.0.1:1").isLocalOnly())
        #expect(try !Endpoint(parsing: "tcp://[2001:db8::1]:1").isLocalOnly())
        #expect(try !Endpoint(parsing: "tcp://[::ffff:10.0.0.1]:1").isLocalOnly())
        // A bare number is a name to the resolver, which reads "0" as 0.0.0.0: not local.
        #expect(try !Endpoint(parsing: "tcp://0:1").isLocalOnly())
        let unresolvable = #expect(throws: EndpointError.self) { try Endpoint(parsing: "tcp://no-such-host.invalid:1").isLocalOnly() }
        #expect(unresolvable?.problem.contains("cannot resolve host 'no-such-host.invalid'") == true)
        #expect(try Endpoint(parsing: "tcp://localhost:7").resolve().description == "tcp://127.0.0.1:7")
    }

    @Test("localhost and [::1] bind and carry messages", arguments: ["tcp://localhost:*", "tcp://[::1]:*"])
    func loopbackNamesWork(_ text: String) throws {
        let context = try Context()
        defer { context.close() }
        let server = try context.socket(.router)
        let client = try context.socket(.dealer)
        defer {
            client.close()
            server.close()
        }
        try server.set(.linger, 0)
        try client.set(.linger, 0)
        let bound = try server.bind(try Endpoint(parsing: text))
        try client.connect(try Endpoint(parsing: bound))
        _ = try client.send([Array("ping".utf8)])
        try server.set(.receiveTimeout, 10_000)
        let frames = try #require(try server.receiveMultipart())
        #expect(frames.last == Array("ping".utf8))
    }

    @Test("The listen backlog can be raised")
    func backlog() throws {
        let context = try Context()
        defer { context.close() }
        let socket = try context.socket(.router)
        defer { socket.close() }
        try socket.set(.backlog, 4_096)
        #expect(try socket.get(.backlog) == 4_096)
    }
}
