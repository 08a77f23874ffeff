import OPQJournal
import ZeroMQ

/// Settings of a coordinator. The defaults bind loopback only: opq runs commands, so an open port is
/// remote code execution.
public struct CoordinatorConfiguration: Sendable {
    /// The default worker endpoint's port.
    public static let defaultWorkersPort = 7130
    /// The default client endpoint's port.
    public static let defaultClientsPort = 7131

    /// Where workers connect (ROUTER). `tcp://127.0.0.1:*` picks a free port.
    public var workersEndpoint = "tcp://127.0.0.1:\(defaultWorkersPort)"
    /// Where clients (`opq`, `OPQClient`) connect (ROUTER).
    public var clientsEndpoint = "tcp://127.0.0.1:\(defaultClientsPort)"
    /// Heartbeat interval both ways, in seconds.
    public var heartbeatInterval = 1.0
    /// Missed intervals before a worker is declared lost.
    public var liveness = 3
    /// Seconds between SIGTERM and SIGKILL when a worker stops an attempt.
    public var killGrace = 10.0
    /// Events kept for watchers that resume after a gap.
    public var eventHistory = 100_000
    /// Bytes of captured output kept in memory over all operations (oldest dropped first).
    public var outputBudget = 256 << 20
    /// Messages handled from one socket per loop turn, so timers and the other socket are served.
    public var messagesPerTurn = 4_096
    /// The state directory (journal and lock). Nil = no journal: nothing survives a restart. The
    /// executable defaults it to ``StateDirectory/defaultPath(environment:)``.
    public var stateDirectory: String?
    /// How hard each journal commit pushes to disk.
    public var sync = Journal.Sync.processCrash
    /// Seconds attempts recovered from the journal wait for their workers to re-register and report
    /// them, before they get a new attempt. Workers notice a restart within `liveness × heartbeatInterval`
    /// and reconnect within a second or so; a worker that re-registers without an attempt ends its wait at once.
    public var recoveryGrace = 5.0
    /// CURVE: both sockets encrypt and authenticate with these keys, and admit only the authorized
    /// public keys (``AuthorizedKeys``). Nil = no encryption, and only loopback or `ipc://` endpoints.
    public var curve: CurveSettings?

    /// The defaults.
    public init() {}
}

/// Why an endpoint is refused for binding.
public struct EndpointError: Error, CustomStringConvertible {
    public let description: String
}

/// The loopback-by-default rule (DESIGN.md: never bind a non-loopback address without CURVE keys).
public enum EndpointPolicy {
    /// Throws unless `endpoint` is `ipc://`, `inproc://` or TCP on a loopback address. With
    /// `allowNonLoopback` (the coordinator has CURVE keys: every peer is authenticated) any TCP address
    /// is accepted.
    public static func checkLoopback(_ endpoint: String, allowNonLoopback: Bool = false) throws(EndpointError) {
        if endpoint.hasPrefix("ipc://") || endpoint.hasPrefix("inproc://") { return }
        guard endpoint.hasPrefix("tcp://") else {
            throw EndpointError(description: "unsupported endpoint '\(endpoint)': use tcp://HOST:PORT or ipc://PATH")
        }
        if allowNonLoopback { return }
        var host = String(endpoint.dropFirst("tcp://".count))
        if host.hasPrefix("[") {
            host = String(host.dropFirst().prefix { $0 != "]" })
        } else if let colon = host.lastIndex(of: ":") {
            host = String(host[..<colon])
        }
        guard host == "localhost" || host == "::1" || host.hasPrefix("127.") else {
            throw EndpointError(description: """
                refusing to bind '\(endpoint)': it is not a loopback address, and opq runs commands, so an open \
                port is remote code execution. Bind 127.0.0.1 (or ipc://), or give the \
                coordinator CURVE keys (--curve-key, see 'opq keys generate') to bind other addresses.
                """)
        }
    }
}
