import OPQCore
import OPQWire
import ZeroMQ

/// Why a request to the coordinator did not get an answer it could use.
public enum ClientError: Error, CustomStringConvertible {
    /// No answer within the deadline: the coordinator is down, unreachable or overloaded.
    case timeout(endpoint: String, seconds: Double)
    /// The coordinator refused the request; nothing changed.
    case refused(Refusal)
    /// The coordinator answered with something that is not a valid message.
    case malformed(WireError)
    /// The local socket failed.
    case transport(ZMQError)
    /// A connection speaking ZMTP by hand (``CoordinatorClient/init(endpoint:security:directZMTP:)``) ended:
    /// the peer broke the protocol, wants CURVE, sent an ERROR or closed the connection.
    case connection(ZMTPError)
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
    /// An execution block could not be added (``RemoteOperation/addExecutionBlock(handler:payload:)``):
    /// the operation was already added to a queue (Foundation raises an exception), or its work is not
    /// handler calls. Nothing changed.
    case executionBlockRefused(operation: String, reason: String)
    /// ``CoordinatorClient/nextWatchUpdate(until:interruption:)`` was called with no watch started.
    case notWatching

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
        case .connection(let error): "\(error)"
        case .closed(let endpoint): "the connection to \(endpoint) was closed"
        case .alreadyAdded(let operation): "\(operation) was already added to a queue; an operation runs once"
        case .notSubmitted(let operation): "\(operation) has not been added to a queue yet"
        case let .executionBlockRefused(operation, reason): "cannot add an execution block to \(operation): \(reason)"
        case .notWatching: "nextWatchUpdate was called before watch(_:): start a watch first, then read its updates"
        }
    }

    /// The coordinator's refusal with its details (code, operation, cycle members…), when this is one.
    public var refusal: Refusal? { if case .refused(let error) = self { error } else { nil } }
}

/// A connection to a coordinator's client endpoint at the level of the wire protocol: requests with
/// replies, and watch streams, as protobuf messages.
///
/// A DEALER socket; requests carry increasing ids and their replies are matched by id, so stream
/// messages that arrive in between are kept for ``nextStreamMessage(timeout:)``. Use from one thread
/// at a time.
///
/// Not part of OPQClient's public API (it speaks `Opq_V1_*`): programs use ``CoordinatorClient`` or
/// ``RemoteCoordinator``. Protocol tests and the benchmarks reach it with `@_spi(Wire) import OPQClient`.
@_spi(Wire)
public final class CoordinatorConnection {
    /// The endpoint connected to.
    public let endpoint: String
    private let transport: Transport
    private var nextRequestID: UInt64 = 1
    private var inbox: [Opq_V1_CoordinatorToClient] = []
    private var inboxRaw: [[[UInt8]]] = []
    /// Requests whose replies nobody awaits any more (``abandon(_:)``): dropped when they come.
    private var abandoned: Set<UInt64> = []
    /// How the connection is secured.
    public let security: ConnectionSecurity

    /// What carries the messages.
    private enum Transport {
        /// A libzmq DEALER socket; over CURVE `handshakes` tells a refused key from no coordinator.
        case zeroMQ(socket: Socket, context: Context, ownsContext: Bool, handshakes: HandshakeWatch?)
        /// ZMTP spoken by hand, without libzmq.
        case direct(ZMTPDealer)
    }

    /// Connects (lazily: ZeroMQ connects in the background; the first request waits for it).
    public init(endpoint: String, security: ConnectionSecurity = .none, context: Context? = nil) throws(ZMQError) {
        self.endpoint = endpoint
        self.security = security
        let ownsContext = context == nil
        let context = if let context { context } else { try Context() }
        let socket = try context.socket(.dealer)
        try socket.set(.linger, 0)
        try socket.set(.maxMessageSize, Int64(WireLimits.maxFrameBytes))
        try security.apply(to: socket)
        let handshakes = security.isCurve ? try HandshakeWatch(socket) : nil
        try socket.connect(endpoint)
        transport = .zeroMQ(socket: socket, context: context, ownsContext: ownsContext, handshakes: handshakes)
    }

    /// A connection that speaks ZMTP 3.1 itself (``ZMTPDealer``: no libzmq loaded, no context or I/O
    /// thread) when `security` is none and `endpoint` is `ipc://` or `tcp://` to 127.x.x.x; nil otherwise.
    /// Its frames are bounded by ``OPQWire/WireLimits`` as libzmq's `ZMQ_MAXMSGSIZE` bounds them, and
    /// a message by twice the largest frame. It does not reconnect once connected: for short commands.
    public init?(directEndpoint endpoint: String, security: ConnectionSecurity) {
        guard !security.isCurve,
              let dealer = ZMTPDealer(endpoint: endpoint, maxFrameBytes: WireLimits.maxFrameBytes, maxFrames: WireLimits.maxFrames,
                                      maxMessageBytes: 2 * WireLimits.maxFrameBytes)
        else { return nil }
        self.endpoint = endpoint
        self.security = security
        transport = .direct(dealer)
    }

    deinit {
        switch transport {
        case let .zeroMQ(socket, context, ownsContext, handshakes):
            handshakes?.close()
            socket.close()
            if ownsContext { context.close() }
        case .direct(let dealer):
            dealer.close()
        }
    }

    /// Sends a request built by `fill` and waits up to `timeout` seconds for its reply.
    /// - Returns: the reply (never an `error` one) and the raw frames that came with it.
    /// - Throws: `ClientError.refused` with the coordinator's error, or a transport/timeout error.
    @discardableResult
    public func request(timeout: Double = 10, _ fill: (inout Opq_V1_ClientRequest) -> Void) throws(ClientError) -> (reply: Opq_V1_Reply, raw: [[UInt8]]) {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        let id = try send(until: deadline, fill, timeout: timeout)
        switch try awaitReply(id, until: deadline, wake: nil) {
        case .reply(let reply, let raw): return (reply, raw)
        case .timedOut, .woken: throw noAnswer(timeout)
        }
    }

    /// Sends a request whose bytes `encode` builds for its request id (a big submission:
    /// ``OPQWire/Opq_V1_ClientRequest/encodedSubmit(_:_:idempotencyKey:)``) and waits up to `timeout`
    /// seconds for its reply, as ``request(timeout:_:)``.
    @discardableResult
    public func request(timeout: Double = 10, encoded encode: (UInt64) throws(WireError) -> [UInt8]) throws(ClientError) -> (reply: Opq_V1_Reply, raw: [[UInt8]]) {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        let id = nextRequestID
        nextRequestID += 1
        let frames: [[UInt8]]
        do {
            frames = try Frames.encode(encodedBody: try encode(id))
        } catch {
            throw .malformed(error)
        }
        guard try send(frames, until: deadline) else { throw noAnswer(timeout) }
        switch try awaitReply(id, until: deadline, wake: nil) {
        case .reply(let reply, let raw): return (reply, raw)
        case .timedOut, .woken: throw noAnswer(timeout)
        }
    }

    /// Sends a request built by `fill` without waiting for its reply (see ``awaitReply(_:until:wake:)``);
    /// returns its id.
    func send(until deadline: ContinuousClock.Instant, _ fill: (inout Opq_V1_ClientRequest) -> Void,
              timeout: Double) throws(ClientError) -> UInt64 {
        let id = nextRequestID
        nextRequestID += 1
        let message = Opq_V1_ClientRequest.request(id, fill)
        let frames: [[UInt8]]
        do {
            frames = try Frames.encode(message)
        } catch {
            throw .malformed(error)
        }
        guard try send(frames, until: deadline) else { throw noAnswer(timeout) }
        return id
    }

    /// How a wait for a message ended.
    enum Awaited {
        /// The reply to the request (never an `error` one), with its raw frames.
        case reply(Opq_V1_Reply, raw: [[UInt8]])
        /// The deadline passed first.
        case timedOut
        /// The wake-up descriptor became readable first.
        case woken
    }

    /// Waits for the reply to request `id` until `deadline` (nil = no limit) or until `wake` (a file
    /// descriptor) is readable; stream messages that come first are kept for ``nextStreamMessage(timeout:)``.
    /// - Throws: `ClientError.refused` when the reply is a refusal; a transport error.
    func awaitReply(_ id: UInt64, until deadline: ContinuousClock.Instant?, wake: Int32?) throws(ClientError) -> Awaited {
        try awaitReply(anyOf: [id], until: deadline, wake: wake)
    }

    /// Waits for the reply to any of the requests `ids`, as ``awaitReply(_:until:wake:)``.
    func awaitReply(anyOf ids: [UInt64], until deadline: ContinuousClock.Instant?, wake: Int32?) throws(ClientError) -> Awaited {
        // Kept while an earlier request of several sent at once was awaited (``CoordinatorClient/jobsAndQueues(firstReplyTimeout:timeout:)``).
        if let k = inbox.firstIndex(where: { if case .reply(let reply) = $0.body { ids.contains(reply.requestID) } else { false } }) {
            let message = inbox.remove(at: k)
            let raw = inboxRaw.remove(at: k)
            guard case .reply(let reply) = message.body else { preconditionFailure("inbox entry \(k) is no longer a reply") }
            if case .error(let error) = reply.result { throw .refused(Refusal(error)) }
            return .reply(reply, raw: raw)
        }
        while true {
            switch try receive(until: deadline, wake: wake) {
            case .message(let message, let raw):
                if case .reply(let reply) = message.body, ids.contains(reply.requestID) || reply.requestID == 0 {
                    if case .error(let error) = reply.result { throw .refused(Refusal(error)) }
                    return .reply(reply, raw: raw)
                }
                if case .reply(let reply) = message.body, abandoned.remove(reply.requestID) != nil { continue }
                inbox.append(message)
                inboxRaw.append(raw)
            case .timedOut: return .timedOut
            case .woken: return .woken
            }
        }
    }

    /// The next message of a watch stream (snapshot, events, or a late reply), waiting up to `timeout`
    /// seconds; nil if none came.
    public func nextStreamMessage(timeout: Double) throws(ClientError) -> Opq_V1_CoordinatorToClient? {
        if case .message(let message, _) = try nextStreamMessage(until: ContinuousClock.now + .milliseconds(Int(timeout * 1000)), wake: nil) {
            return message
        }
        return nil
    }

    /// The next stream message (kept ones first), waiting until `deadline` (nil = no limit) or until
    /// `wake` is readable.
    func nextStreamMessage(until deadline: ContinuousClock.Instant?, wake: Int32?) throws(ClientError) -> Received {
        if !inbox.isEmpty {
            return .message(inbox.removeFirst(), raw: inboxRaw.removeFirst())
        }
        while true {
            let received = try receive(until: deadline, wake: wake)
            if case .message(let message, _) = received, case .reply(let reply) = message.body,
               abandoned.remove(reply.requestID) != nil { continue }
            return received
        }
    }

    /// Says nobody awaits the replies to `ids` any more (one came, or the caller gave up): those
    /// still to come are dropped, those already kept are removed.
    func abandon(_ ids: [UInt64]) {
        for id in ids {
            if let k = inbox.firstIndex(where: { if case .reply(let reply) = $0.body { reply.requestID == id } else { false } }) {
                inbox.remove(at: k)
                inboxRaw.remove(at: k)
            } else {
                abandoned.insert(id)
            }
        }
    }

    /// The error for a request that got no answer within `timeout` seconds: over CURVE, a failed
    /// handshake says the key was not accepted; otherwise nobody answered in time.
    func noAnswer(_ timeout: Double) -> ClientError {
        if case .zeroMQ(_, _, _, let handshakes?) = transport, let refusal = handshakes.refusalSoFar() { return .keyNotAccepted(endpoint: endpoint, seconds: timeout, reason: refusal) }
        return .timeout(endpoint: endpoint, seconds: timeout)
    }

    /// Queues `frames` for the coordinator, waiting until `deadline` at most; false if the socket would
    /// not take them by then.
    ///
    /// A DEALER blocks a send while it has no connection to queue it on. That is the normal state of
    /// a CURVE connection whose handshake was refused: libzmq drops such a connection for good (no
    /// reconnect), so a plain blocking send never returns.
    private func send(_ frames: [[UInt8]], until deadline: ContinuousClock.Instant) throws(ClientError) -> Bool {
        let socket: Socket
        switch transport {
        case .zeroMQ(let zeroMQ, _, _, _):
            socket = zeroMQ
        case .direct(let dealer):
            do throws(ZMTPError) {
                return try dealer.send(frames, until: deadline)
            } catch {
                throw .connection(error)
            }
        }
        var poller = Poller()
        do {
            _ = try poller.add(socket, events: .writable)
            while try socket.send(frames, flags: .dontWait) != .sent {
                guard ContinuousClock.now < deadline, try poller.poll(timeout: Int(Poller.milliseconds(until: deadline))) > 0 else { return false }
            }
            return true
        } catch {
            throw .transport(error)
        }
    }

    /// What one wait on the socket gave.
    enum Received {
        case message(Opq_V1_CoordinatorToClient, raw: [[UInt8]])
        case timedOut
        case woken
    }

    /// The next message from the socket, waiting until `deadline` (nil = no limit) or until `wake` (a
    /// file descriptor, e.g. a signal's self-pipe) is readable.
    private func receive(until deadline: ContinuousClock.Instant?, wake: Int32?) throws(ClientError) -> Received {
        let socket: Socket
        switch transport {
        case .zeroMQ(let zeroMQ, _, _, _):
            socket = zeroMQ
        case .direct(let dealer):
            let received: ZMTPDealer.Received
            do throws(ZMTPError) {
                received = try dealer.receive(until: deadline, wake: wake)
            } catch {
                throw .connection(error)
            }
            switch received {
            case .message(let frames): return try Self.decoded(frames)
            case .timedOut: return .timedOut
            case .woken: return .woken
            }
        }
        var poller = Poller()
        do {
            let socketIndex = try poller.add(socket)
            let wakeIndex = wake.map { poller.add(fileDescriptor: $0) }
            while true {
                guard try poller.poll(timeout: deadline.map { Int(Poller.milliseconds(until: $0)) } ?? -1) > 0 else { return .timedOut }
                if poller.isReadable(socketIndex), let frames = try socket.receiveMultipart(flags: .dontWait) {
                    return try Self.decoded(frames)
                }
                if let wakeIndex, poller.readyEvents(at: wakeIndex).contains(.readable) { return .woken }
            }
        } catch let error as ZMQError {
            throw .transport(error)
        } catch let error as ClientError {
            throw error
        } catch {
            preconditionFailure("unexpected \(error)")
        }
    }

    /// A message received as `frames`, decoded.
    private static func decoded(_ frames: [[UInt8]]) throws(ClientError) -> Received {
        do {
            let (message, raw) = try Frames.decode(frames, as: Opq_V1_CoordinatorToClient.self)
            return .message(message, raw: raw)
        } catch {
            throw .malformed(error)
        }
    }

    /// Submits `submission`; returns the receipt.
    public func submit(_ submission: Submission, idempotencyKey: String = "", timeout: Double = 30) throws(ClientError) -> Opq_V1_SubmitAccepted {
        try request(timeout: timeout) { (id) throws(WireError) in
            try Opq_V1_ClientRequest.encodedSubmit(id, submission, idempotencyKey: idempotencyKey)
        }.reply.submitted
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
