import Foundation
import OPQClient
import OPQCore

/// Opening a connection the way every command does: a quick round trip first, so an absent
/// coordinator is reported at once with exit status 3 instead of a long request timeout.
enum Connection {
    /// How connections are secured: set once from ``GlobalOptions`` (CURVE keys) before any is opened.
    nonisolated(unsafe) static var security = ConnectionSecurity.none

    /// Seconds the first answer of a coordinator is awaited: one that does not answer is reported this soon.
    static let probeSeconds: Double = 5

    /// The connection ``forCommandThatExits(_:probed:)`` left open.
    nonisolated(unsafe) private static var keptUntilExit: CoordinatorClient?

    /// A connection to `endpoint` (``open(_:probeTimeout:security:directZMTP:)``, or ``unprobed(_:security:directZMTP:)``
    /// when not `probed`) for a command that exits right after its last request (`opq status`), left
    /// open until the process exits. Without CURVE keys, to `ipc://` or `tcp://127.x.x.x`, it speaks ZMTP
    /// itself (no libzmq loaded, no context or thread: ≈ 2.5 ms of `opq status`'s ≈ 5.8 ms CPU, issue 19);
    /// otherwise closing it would terminate its ZeroMQ context, which stops and joins libzmq's two threads
    /// (≈ 0.15 ms), and exiting ends them as well. Nothing is lost: every reply came, and the socket has LINGER 0.
    static func forCommandThatExits(_ endpoint: String, probed: Bool) throws(ExitStatus) -> CoordinatorClient {
        let connection = try probed ? open(endpoint, directZMTP: true) : unprobed(endpoint, directZMTP: true)
        keptUntilExit = connection
        return connection
    }

    /// Opens a connection to `endpoint` secured with `security` (default: ``security``, from the options).
    static func open(_ endpoint: String, probeTimeout: Double = probeSeconds, security: ConnectionSecurity? = nil,
                     directZMTP: Bool = false) throws(ExitStatus) -> CoordinatorClient {
        let connection = try unprobed(endpoint, security: security, directZMTP: directZMTP)
        do {
            try connection.ping(timeout: probeTimeout)
        } catch {
            throw fail(.unreachable, "\(error)")
        }
        return connection
    }

    /// A connection to `endpoint` without the probe round trip, for a command whose first request is
    /// awaited ``probeSeconds`` at most itself (`opq status`). `directZMTP`: see ``CoordinatorClient/init(endpoint:security:directZMTP:)``.
    static func unprobed(_ endpoint: String, security: ConnectionSecurity? = nil, directZMTP: Bool = false) throws(ExitStatus) -> CoordinatorClient {
        do {
            return try CoordinatorClient(endpoint: endpoint, security: security ?? Self.security, directZMTP: directZMTP)
        } catch {
            throw fail(.unreachable, "cannot connect to \(endpoint): \(error)")
        }
    }

    /// A failed request as an exit status: unreachable for transport trouble and for a coordinator that
    /// cannot take changes now (its state disk is full: retry later), usage for other refusals.
    static func status(for error: ClientError) -> ExitStatus {
        switch error {
        case .refused(let refusal) where refusal.code == .internal: fail(.unreachable, refusal.message)
        case .refused(let refusal): fail(.usage, refusal.message)
        default: fail(.unreachable, "\(error)")
        }
    }
}
