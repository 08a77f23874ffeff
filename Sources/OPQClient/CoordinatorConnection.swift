import OPQCore
import OPQWire
import ZeroMQ

/// Why a request to the coordinator did not get an answer it could use.
public enum ClientError: Error, CustomStringConvertible {
    /// No answer within the deadline: the coordinator is down, unreachable or overloaded.
    case timeout(endpoint: String, seconds: Double)
    /// The coordinator refused the request; nothing changed.
    case refused(Opq_V1_Error)
    /// The coordinator answered with something that is not a valid message.
    case malformed(WireError)
    /// The local socket failed.
    case transport(ZMQError)
    /// No answer within `seconds` over a CURVE connection whose handshake failed: the coordinator
    /// refused this client's key, the server key is not its own, or it does not speak CURVE (`reason`).
    /// (No coordinator at all is ``timeout(endpoint:seconds:)``.)
    case keyNotAccepted(endpoint: String, seconds: Double, reason: KeyRefusal)
    /// The connection was closed (``RemoteCoordinator/close()``) before an answer came.
    case closed(endpoint: String)
    /// An operation was given to a queue a second time (`Operation` aborts the process; we throw).
    case alreadyAdded(operation: String)
    /// A request that needs a submitted operation was made on one that was not added to a queue yet.
    case notSubmitted(operation: String)

    public var description: String {
        switch self {
        case let .timeout(endpoint, seconds):
            "no answer from the coordinator at \(endpoint) within \(seconds) s (is opq-coordinator running?)"
        case let .keyNotAccepted(endpoint, _, .refused(status)):
            "the coordinator did not accept this key: the coordinator at \(endpoint) refused it (ZAP status \(status)). Put this "
                + "client's public key in the coordinator's --authorized-clients directory (a worker's key is not accepted "
                + "there) and send the coordinator SIGHUP"
        case let .keyNotAccepted(endpoint, _, .handshakeFailed):
            "the coordinator did not accept this key: the CURVE handshake with \(endpoint) failed. Check that the server key "
                + "(--server-key, \(CurveKeys.serverKeyVariable)) is that coordinator's public key"
        case let .keyNotAccepted(endpoint, _, .notCurve):
            "the coordinator did not accept this key: \(endpoint) does not speak CURVE (a coordinator started without "
                + "--curve-key?). Connect without --server-key and \(CurveKeys.serverKeyVariable), or give it keys"
        case .refused(let error): error.message
        case .malformed(let error): "malformed answer from the coordinator: \(error)"
        case .transport(let error): "\(error)"
        case .closed(let endpoint): "the connection to \(endpoint) was closed"
        case .alreadyAdded(let operation): "\(operation) was already added to a queue; an operation runs once"
        case .notSubmitted(let operation): "\(operation) has not been added to a queue yet"
        }
    }

    /// The coordinator's refusal with its details (code, operation, cycle members…), when this is one.
    public var refusal: Opq_V1_Error? { if case .refused(let error) = self { error } else { nil } }
}

/// A connection to a coordinator's client endpoint: requests with replies, and watch streams.
///
/// A DEALER socket; requests carry increasing ids and their replies are matched by id, so stream
/// messages that arrive in between are kept for ``nextStreamMessage(timeout:)``. Use from one thread
/// at a time.
public final class CoordinatorConnection {
    /// The endpoint connected to.
    public let endpoint: String
    private let context: Context
    private let ownsContext: Bool
    private let socket: Socket
    private var nextRequestID: UInt64 = 1
    private var inbox: [Opq_V1_CoordinatorToClient] = []
    private var inboxRaw: [[[UInt8]]] = []
    /// How the connection is secured.
    public let security: ConnectionSecurity
    /// Over CURVE: the socket's handshakes, telling a refused key from no coordinator.
    private let handshakes: HandshakeWatch?

    /// Connects (lazily: ZeroMQ connects in the background; the first request waits for it).
    public init(endpoint: String, security: ConnectionSecurity = .none, context: Context? = nil) throws(ZMQError) {
        self.endpoint = endpoint
        self.security = security
        ownsContext = context == nil
        if let context {
            self.context = context
        } else {
            self.context = try Context()
        }
        socket = try self.context.socket(.dealer)
        try socket.set(.linger, 0)
        try socket.set(.maxMessageSize, Int64(WireLimits.maxFrameBytes))
        try security.apply(to: socket)
        handshakes = security.isCurve ? try HandshakeWatch(socket) : nil
        try socket.connect(endpoint)
    }

    deinit {
        handshakes?.close()
        socket.close()
        if ownsContext { context.close() }
    }

    /// Sends a request built by `fill` and waits up to `timeout` seconds for its reply.
    /// - Returns: the reply (never an `error` one) and the raw frames that came with it.
    /// - Throws: `ClientError.refused` with the coordinator's error, or a transport/timeout error.
    @discardableResult
    public func request(timeout: Double = 10, _ fill: (inout Opq_V1_ClientRequest) -> Void) throws(ClientError) -> (reply: Opq_V1_Reply, raw: [[UInt8]]) {
        let id = nextRequestID
        nextRequestID += 1
        let message = Opq_V1_ClientRequest.request(id, fill)
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        let frames: [[UInt8]]
        do {
            frames = try Frames.encode(message)
        } catch {
            throw .malformed(error)
        }
        guard try send(frames, until: deadline) else { throw noAnswer(timeout) }
        while true {
            guard let (message, raw) = try receive(until: deadline) else { throw noAnswer(timeout) }
            if case .reply(let reply) = message.body, reply.requestID == id || reply.requestID == 0 {
                if case .error(let error) = reply.result { throw .refused(error) }
                return (reply, raw)
            }
            inbox.append(message)
            inboxRaw.append(raw)
        }
    }

    /// The next message of a watch stream (snapshot, events, or a late reply), waiting up to `timeout`
    /// seconds; nil if none came.
    public func nextStreamMessage(timeout: Double) throws(ClientError) -> Opq_V1_CoordinatorToClient? {
        if !inbox.isEmpty {
            inboxRaw.removeFirst()
            return inbox.removeFirst()
        }
        return try receive(until: ContinuousClock.now + .milliseconds(Int(timeout * 1000)))?.message
    }

    /// The error for a request that got no answer within `timeout` seconds: over CURVE, a failed
    /// handshake says the key was not accepted; otherwise nobody answered in time.
    private func noAnswer(_ timeout: Double) -> ClientError {
        if let refusal = handshakes?.refusalSoFar() { return .keyNotAccepted(endpoint: endpoint, seconds: timeout, reason: refusal) }
        return .timeout(endpoint: endpoint, seconds: timeout)
    }

    /// Queues `frames` for the coordinator, waiting until `deadline` at most; false if the socket would
    /// not take them by then.
    ///
    /// A DEALER blocks a send while it has no connection to queue it on. That is the normal state of
    /// a CURVE connection whose handshake was refused: libzmq drops such a connection for good (no
    /// reconnect), so a plain blocking send never returns.
    private func send(_ frames: [[UInt8]], until deadline: ContinuousClock.Instant) throws(ClientError) -> Bool {
        var poller = Poller()
        do {
            _ = try poller.add(socket, events: .writable)
            while try socket.send(frames, flags: .dontWait) != .sent {
                guard ContinuousClock.now < deadline, try poller.poll(timeout: Self.milliseconds(until: deadline)) > 0 else { return false }
            }
            return true
        } catch {
            throw .transport(error)
        }
    }

    /// Milliseconds from now to `deadline`, at least 0 (a `zmq_poll` timeout).
    private static func milliseconds(until deadline: ContinuousClock.Instant) -> Int {
        let left = deadline - ContinuousClock.now
        return max(0, Int(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
    }

    private func receive(until deadline: ContinuousClock.Instant) throws(ClientError) -> (message: Opq_V1_CoordinatorToClient, raw: [[UInt8]])? {
        var poller = Poller()
        do {
            _ = try poller.add(socket)
            while true {
                guard try poller.poll(timeout: Self.milliseconds(until: deadline)) > 0 else { return nil }
                guard let frames = try socket.receiveMultipart(flags: .dontWait) else { continue }
                do {
                    let (message, raw) = try Frames.decode(frames, as: Opq_V1_CoordinatorToClient.self)
                    return (message, raw)
                } catch {
                    throw ClientError.malformed(error)
                }
            }
        } catch let error as ZMQError {
            throw .transport(error)
        } catch let error as ClientError {
            throw error
        } catch {
            preconditionFailure("unexpected \(error)")
        }
    }

    /// Submits `submission`; returns the receipt.
    public func submit(_ submission: Submission, idempotencyKey: String = "", timeout: Double = 30) throws(ClientError) -> Opq_V1_SubmitAccepted {
        try request(timeout: timeout) { $0.submit = Opq_V1_Submit(submission, idempotencyKey: idempotencyKey) }.reply.submitted
    }

    /// Waits until job `job` has finished (or `timeout`); returns its info.
    public func wait(job: JobID, timeout: Double) throws(ClientError) -> Opq_V1_WaitResult {
        try request(timeout: timeout + 5) {
            $0.wait.job = job.rawValue
            $0.wait.timeoutSeconds = timeout
        }.reply.waited
    }

    /// Everything known about operation `id`, with its output tails when `includeOutput`.
    public func operation(_ id: OperationID, includeOutput: Bool = false) throws(ClientError) -> (info: Opq_V1_OperationInfo, raw: [[UInt8]]) {
        let (reply, raw) = try request {
            $0.getOperation.operation = id.rawValue
            $0.getOperation.includeOutput = includeOutput
        }
        return (reply.operation, raw)
    }
}
