import Logging
import OPQCore
import ZeroMQ

/// CURVE settings of a coordinator: its key pair, and the directories of the public keys it admits
/// on each socket (every `*.public` file; see ``CurveKeys``).
public struct CurveSettings: Sendable {
    /// The coordinator's key pair (workers and clients are given its public key).
    public var keys: CurveKeyPair
    /// Public keys of the workers allowed to connect to the workers endpoint.
    public var authorizedWorkers: String
    /// Public keys of the clients allowed to connect to the clients endpoint (submit, cancel, watch…).
    public var authorizedClients: String

    public init(keys: CurveKeyPair, authorizedWorkers: String, authorizedClients: String) {
        self.keys = keys
        self.authorizedWorkers = authorizedWorkers
        self.authorizedClients = authorizedClients
    }
}

/// Which of the coordinator's two sockets a peer connects to — its role. The raw value is the socket's
/// ZAP domain (`ZMQ_ZAP_DOMAIN`), which tells the ZAP handler which socket asks.
public enum PeerRole: String, Sendable, CaseIterable {
    case worker = "opq-workers"
    case client = "opq-clients"
}

/// The ZAP decision (RFC 27): a pure value, the public keys admitted per role, loaded from the
/// authorized directories and reloaded on SIGHUP.
///
/// A peer is admitted only with CURVE, on a known domain, with a key listed for that domain's role: a
/// worker key cannot submit or cancel, a client key cannot register as a worker (a key listed in both
/// directories has both roles). The admitted peer's user id is its Z85 public key, which the coordinator
/// reads back from every message (`User-Id`) and binds a worker's name to.
public struct AuthorizedKeys: Sendable, Equatable {
    public var workers: Set<String>
    public var clients: Set<String>

    public init(workers: Set<String> = [], clients: Set<String> = []) {
        self.workers = workers
        self.clients = clients
    }

    /// Reads both directories of `settings`.
    public init(loading settings: CurveSettings) throws(CurveKeyError) {
        self.init(workers: try CurveKeys.publicKeys(in: settings.authorizedWorkers),
                  clients: try CurveKeys.publicKeys(in: settings.authorizedClients))
    }

    /// Whether `key` may connect as `role`.
    public func admits(_ key: String?, as role: PeerRole) -> Bool {
        guard let key else { return false }
        return switch role {
        case .worker: workers.contains(key)
        case .client: clients.contains(key)
        }
    }

    /// The answer to one ZAP request: admitted (user id = the public key) or refused, and why.
    public func decide(domain: String, mechanism: String, publicKey: String?) -> (admit: Bool, reason: String, userID: String) {
        guard mechanism == "CURVE", let publicKey else { return (false, "CURVE required", "") }
        guard let role = PeerRole(rawValue: domain) else { return (false, "unknown ZAP domain '\(domain)'", "") }
        guard admits(publicKey, as: role) else { return (false, "key not authorized for \(role)s", "") }
        return (true, "OK", publicKey)
    }

    /// The keys of `role` that `self` has and `newer` does not (revoked by a reload).
    public func revoked(_ role: PeerRole, in newer: AuthorizedKeys) -> Set<String> {
        switch role {
        case .worker: workers.subtracting(newer.workers)
        case .client: clients.subtracting(newer.clients)
        }
    }
}

extension Coordinator {
    /// Answers the ZAP requests libzmq queued (peers waiting in their handshake), on the loop thread.
    func answerZAP() throws {
        guard let zap else { return }
        try zap.answer { request in
            let verdict = state.authorizedKeys.decide(domain: request.domain, mechanism: request.mechanism, publicKey: request.curvePublicKey)
            if !verdict.admit {
                logger.warning("refused a connection", metadata: [
                    "peer.address": "\(request.address)", "socket": "\(request.domain)", "reason": "\(verdict.reason)",
                    "key": "\(request.curvePublicKey ?? "none")",
                ])
            }
            return verdict
        }
    }

    /// Rereads the authorized directories (SIGHUP). A worker whose key was removed is disconnected and
    /// declared lost (its attempts are fenced and requeued, as for any lost worker); a revoked client's
    /// later requests are dropped. A directory that cannot be read keeps the previous keys.
    func reloadAuthorizedKeys(now: Double) {
        guard let curve = configuration.curve else { return }
        let newer: AuthorizedKeys
        do {
            newer = try AuthorizedKeys(loading: curve)
        } catch {
            logger.error("cannot reload the authorized keys; keeping the previous ones", metadata: ["error": "\(error)"])
            return
        }
        let revokedWorkers = state.authorizedKeys.revoked(.worker, in: newer)
        state.authorizedKeys = newer
        logger.notice("reloaded the authorized keys", metadata: [
            "workers": "\(newer.workers.count)", "clients": "\(newer.clients.count)", "revoked.workers": "\(revokedWorkers.count)",
        ])
        for (id, session) in state.sessions where !newer.admits(session.publicKey, as: .worker) {
            state.revoke(id, session: session, now: now)
        }
    }

    /// A client request, unless its key was revoked since it connected (then it is dropped: the client
    /// times out with "the coordinator did not accept this key").
    func handleAuthenticatedClientMessage(_ frames: [[UInt8]], peerKey: String?, now: Double) throws {
        guard state.isAuthorized(peerKey, as: .client) else {
            logger.warning("dropped a request from a client whose key is not authorized", metadata: ["key": "\(peerKey ?? "none")"])
            return
        }
        if let request = state.decodeClient(frames) {
            let refusal = try journalRefusal(of: request.message, bytes: frames.reduce(0) { $0 + $1.count })
            state.handleClient(request, frames: frames, journalRefusal: refusal, now: now)
        }
        try perform(state.takeActions(), now: now)
    }
}
