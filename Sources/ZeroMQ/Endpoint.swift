#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A ZeroMQ endpoint parsed into exactly one address: `tcp://HOST:PORT`, `tcp://[IPv6]:PORT`,
/// `ipc://PATH` or `inproc://NAME`.
///
/// libzmq accepts much more in an endpoint string than one address: a source address before `;`
/// (`tcp://127.0.0.1:0;0.0.0.0:7130` *binds 0.0.0.0*), interface names (`tcp://eth0:7130`), wildcards
/// (`tcp://*:7130`), zone ids (`[fe80::1%eth0]`). A policy that looks at a prefix of the string is
/// fooled by them, so every endpoint opq binds or connects is parsed here first, and anything but one
/// plain address is refused with an ``EndpointError`` that says what to write instead.
///
/// The numeric `0.0.0.0` and `[::]` (every interface) are plain addresses: they parse, are not
/// ``isLocalOnly()``, and the coordinator's policy admits them only when its peers are authenticated
/// (CURVE).
///
/// A host name is allowed (`tcp://localhost:7130`); ``resolve()`` looks it up (`getaddrinfo`) so that
/// a policy can check every address it stands for, and so libzmq is given a numeric address (it does
/// not resolve names for `bind`, and needs ``SocketOption/ipv6`` for an IPv6 one: ``Socket/bind(_:)-(Endpoint)``
/// and ``Socket/connect(_:)-(Endpoint)`` set it).
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// The transport and its one address.
    public enum Address: Hashable, Sendable {
        /// TCP to `host` (see ``Host``) on `port`; port `nil` is `*`: any free port (bind only).
        case tcp(host: Host, port: UInt16?)
        /// A Unix domain socket at `path` (`*` = a fresh path chosen by libzmq, bind only).
        case ipc(path: String)
        /// In-process, by name.
        case inproc(name: String)
    }

    /// A TCP host as written.
    public enum Host: Hashable, Sendable, CustomStringConvertible {
        /// A numeric IPv4 address (`127.0.0.1`).
        case ipv4(String)
        /// A numeric IPv6 address, without brackets (`::1`).
        case ipv6(String)
        /// A host name to resolve (`localhost`).
        case name(String)

        /// The host as an endpoint carries it (IPv6 in brackets).
        public var description: String {
            switch self {
            case .ipv4(let text), .name(let text): text
            case .ipv6(let text): "[\(text)]"
            }
        }
    }

    /// The parsed address.
    public let address: Address

    /// Wraps an address.
    public init(_ address: Address) { self.address = address }

    /// The endpoint as libzmq reads it.
    public var description: String {
        switch address {
        case .tcp(let host, let port): "tcp://\(host):\(port.map(String.init) ?? "*")"
        case .ipc(let path): "ipc://\(path)"
        case .inproc(let name): "inproc://\(name)"
        }
    }

    /// Parses `text`, refusing anything that is not exactly one address (see the type's documentation).
    public init(parsing text: String) throws(EndpointError) {
        func refuse(_ problem: String) -> EndpointError { EndpointError(endpoint: text, problem: problem) }
        if text.utf8.contains(0) { throw refuse("it contains a NUL byte") }
        if let rest = text.dropPrefix("ipc://") {
            guard !rest.isEmpty else { throw refuse("the ipc:// path is empty; write ipc:///path/to/socket") }
            address = .ipc(path: rest)
        } else if let rest = text.dropPrefix("inproc://") {
            guard !rest.isEmpty else { throw refuse("the inproc:// name is empty") }
            address = .inproc(name: rest)
        } else if let rest = text.dropPrefix("tcp://") {
            address = try Endpoint.parseTCP(rest, refuse)
        } else {
            throw refuse("unsupported transport; use tcp://HOST:PORT, tcp://[IPv6]:PORT or ipc://PATH")
        }
    }

    /// Parses `text` as an endpoint another process can reach (what a user gives `opq-coordinator`,
    /// `opq-worker` or `opq`): as ``init(parsing:)``, but `inproc://` is refused, because only the
    /// threads of one process can reach it (opq binds one itself for the workers of a one-process
    /// cluster, `opq-coordinator --local-workers`).
    public init(parsingBetweenProcesses text: String) throws(EndpointError) {
        try self.init(parsing: text)
        if case .inproc = address {
            throw EndpointError(endpoint: text, problem: """
                inproc:// is only reachable inside one process, so no other program could connect to it; use \
                tcp://HOST:PORT or ipc://PATH (opq-coordinator --local-workers N runs workers inside the coordinator)
                """)
        }
    }

    /// True for `inproc://`: reachable only by the threads of this process (sharing its context).
    public var isInProcess: Bool {
        if case .inproc = address { true } else { false }
    }

    private static func parseTCP(_ rest: String, _ refuse: (String) -> EndpointError) throws(EndpointError) -> Address {
        if rest.contains(";") {
            throw refuse("';' introduces a source address, which opq does not accept: give one address")
        }
        let hostText: String
        let portText: String
        let host: Host
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw refuse("an IPv6 address lacks its closing ']'") }
            hostText = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":") else { throw refuse("write the port after the address: tcp://[\(hostText)]:PORT") }
            portText = String(after.dropFirst())
            if hostText.contains("%") { throw refuse("interface (zone) names are not accepted: give a plain address") }
            guard numericBytes(hostText, family: AF_INET6) != nil else { throw refuse("'\(hostText)' is not an IPv6 address") }
            host = .ipv6(hostText)
        } else {
            guard let colon = rest.lastIndex(of: ":") else { throw refuse("the port is missing: write tcp://HOST:PORT") }
            hostText = String(rest[..<colon])
            portText = String(rest[rest.index(after: colon)...])
            if hostText.contains(":") { throw refuse("write an IPv6 address in brackets: tcp://[\(hostText)]:PORT") }
            if hostText.isEmpty { throw refuse("the host is missing: write tcp://HOST:PORT") }
            if hostText == "*" {
                throw refuse("'*' means every interface: write 0.0.0.0 or [::] for that (allowed only with CURVE keys), or one address, e.g. 127.0.0.1")
            }
            if numericBytes(hostText, family: AF_INET) != nil {
                host = .ipv4(hostText)
            } else {
                let allowed = hostText.utf8.allSatisfy { byte in
                    (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2D || byte == 0x2E
                }
                guard allowed, hostText.utf8.count <= 253 else {
                    throw refuse("'\(hostText)' is neither an address nor a host name")
                }
                host = .name(hostText)
            }
        }
        if portText == "*" { return .tcp(host: host, port: nil) }
        guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let port = Int(portText), port <= 65_535 else {
            throw refuse("'\(portText)' is not a port: use 1 to 65535, or * (or 0) for any free port")
        }
        return .tcp(host: host, port: port == 0 ? nil : UInt16(port))
    }

    /// The bytes of `text` as a numeric address of `family` (`inet_pton`), or nil when it is not one.
    static func numericBytes(_ text: String, family: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16)
        guard inet_pton(family, text, &buffer) == 1 else { return nil }
        return Array(buffer.prefix(family == AF_INET ? 4 : 16))
    }

    // MARK: - Resolution

    /// One resolved IP address.
    public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
        /// `AF_INET` or `AF_INET6`.
        public let family: Int32
        /// The address in numeric form (no brackets).
        public let text: String
        /// True for 127.0.0.0/8, `::1` and IPv4-mapped 127.0.0.0/8.
        public let isLoopback: Bool

        public var description: String { text }
    }

    /// The addresses a TCP endpoint's host stands for (a numeric host is its own one address); empty for
    /// `ipc://` and `inproc://`. Fails when a name does not resolve.
    public func addresses() throws(EndpointError) -> [IPAddress] {
        guard case .tcp(let host, _) = address else { return [] }
        let (text, family): (String, Int32) = switch host {
        case .ipv4(let text): (text, AF_INET)
        case .ipv6(let text): (text, AF_INET6)
        case .name(let text): (text, AF_UNSPEC)
        }
        var hints = addrinfo()
        hints.ai_family = family
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        if family != AF_UNSPEC { hints.ai_flags = AI_NUMERICHOST }
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(text, nil, &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw EndpointError(endpoint: description, problem: "cannot resolve host '\(text)': \(reason)")
        }
        defer { freeaddrinfo(first) }
        var result: [IPAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let entry = node {
            if let resolved = IPAddress(entry.pointee), !result.contains(resolved) { result.append(resolved) }
            node = entry.pointee.ai_next
        }
        guard !result.isEmpty else { throw EndpointError(endpoint: description, problem: "host '\(text)' has no IP address") }
        return result
    }

    /// The endpoint with a host name replaced by one of its numeric addresses (the first IPv4 one if
    /// any, else the first), which libzmq can bind and connect alike. Numeric hosts, `ipc://` and
    /// `inproc://` are returned as they are.
    public func resolve() throws(EndpointError) -> Endpoint {
        guard case .tcp(.name, let port) = address else { return self }
        let all = try addresses()
        let chosen = all.first { $0.family == AF_INET } ?? all[0]
        return Endpoint(.tcp(host: chosen.family == AF_INET6 ? .ipv6(chosen.text) : .ipv4(chosen.text), port: port))
    }

    /// True for a TCP endpoint with a numeric IPv6 host: the socket needs ``SocketOption/ipv6``.
    public var needsIPv6: Bool {
        if case .tcp(.ipv6, _) = address { true } else { false }
    }

    /// True when only this machine can reach the endpoint: `ipc://`, `inproc://`, or TCP whose host
    /// resolves to loopback addresses only. Fails when a name does not resolve.
    public func isLocalOnly() throws(EndpointError) -> Bool {
        guard case .tcp = address else { return true }
        return try addresses().allSatisfy(\.isLoopback)
    }
}

extension Endpoint.IPAddress {
    /// The address of one `getaddrinfo` result, or nil for a family other than IPv4/IPv6.
    init?(_ info: addrinfo) {
        guard let socketAddress = info.ai_addr else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch info.ai_family {
        case AF_INET:
            var address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            let firstByte = UInt32(bigEndian: address.s_addr) >> 24
            self.init(family: AF_INET, text: Self.text(buffer), isLoopback: firstByte == 127)
        case AF_INET6:
            var address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            let bytes = withUnsafeBytes(of: address) { Array($0) }
            let isV6Loopback = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
            let isMappedV4Loopback = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
            self.init(family: AF_INET6, text: Self.text(buffer), isLoopback: isV6Loopback || isMappedV4Loopback)
        default:
            return nil
        }
    }

    /// The NUL-terminated text `inet_ntop` wrote into `buffer`.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Why an endpoint is refused: the endpoint as given and what is wrong with it.
public struct EndpointError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The endpoint as given.
    public let endpoint: String
    /// What is wrong, and what to write instead.
    public let problem: String

    /// An error about `endpoint`.
    public init(endpoint: String, problem: String) {
        self.endpoint = endpoint
        self.problem = problem
    }

    public var description: String { "invalid endpoint '\(endpoint)': \(problem)" }
}

extension Socket {
    /// Binds to `endpoint`, resolving a host name first (libzmq binds numeric addresses only) and
    /// enabling ``SocketOption/ipv6`` for an IPv6 address. Returns the endpoint as bound (`*` resolved).
    @discardableResult
    public func bind(_ endpoint: Endpoint) throws -> String {
        let resolved = try endpoint.resolve()
        if resolved.needsIPv6 { try set(.ipv6, true) }
        return try bind(resolved.description)
    }

    /// Connects to `endpoint`, resolved the same way as ``bind(_:)-(Endpoint)`` so both sides agree on
    /// the address a host name stands for.
    public func connect(_ endpoint: Endpoint) throws {
        let resolved = try endpoint.resolve()
        if resolved.needsIPv6 { try set(.ipv6, true) }
        try connect(resolved.description)
    }
}

private extension String {
    /// The rest of the string after `prefix`, or nil when it does not start with it.
    func dropPrefix(_ prefix: String) -> String? {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }
}
