import Logging
import OPQCore
@testable import OPQCoordinator
@testable import OPQJournal
import OPQWire

/// Drives a ``CoordinatorState`` in process: messages go in as the frames a socket would deliver, time
/// is a value the test moves, and every action comes out rendered as a short line so a test states the
/// exact sequence ("→w1 dispatch 1#1", "journal attempt 1 of op-1 on worker 'w1'", "commit",
/// "reply 7 submitted job-1 [1, 2]"). No socket, no thread, no clock.
struct StateDriver {
    var state: CoordinatorState
    /// The injected clock, in seconds.
    var now = 100.0

    init(durable: Bool = true, heartbeatInterval: Double = 1, liveness: Int = 3, clientBacklogMessages: Int = 10_000,
         eventHistory: Int = 100_000, reservationLease: Double = Limits.defaultReservationLease) {
        var configuration = CoordinatorConfiguration()
        configuration.reservationLease = reservationLease
        configuration.eventHistory = eventHistory
        configuration.heartbeatInterval = heartbeatInterval
        configuration.liveness = liveness
        configuration.killGrace = 10
        configuration.clientBacklogMessages = clientBacklogMessages
        var coreConfiguration = Scheduler.Configuration()
        coreConfiguration.workerTimeout = heartbeatInterval * Double(liveness)
        coreConfiguration.leaseMargin = 0.5
        state = CoordinatorState(
            configuration: configuration, core: Scheduler(configuration: coreConfiguration), instanceID: "test",
            isDurable: durable, logger: Logger(label: "opq.test") { _ in SwiftLogNoOpLogHandler() },
            makeSecret: { Array(repeating: 7, count: CoordinatorState.sessionSecretBytes) })
        state.wallTime = 1_000
    }

    // MARK: - Messages in

    /// A message from the worker connection `connection`; returns the actions it caused at once.
    mutating func worker(_ connection: String, _ fill: (inout Opq_V1_WorkerMessage) -> Void) throws -> [String] {
        var message = Opq_V1_WorkerMessage()
        fill(&message)
        state.handleWorker(try Frames.encode(message, to: Array(connection.utf8)), peerKey: nil, now: now)
        return state.takeActions().map(render)
    }

    /// Registers worker `name` on connection `name` with `slots`.
    mutating func register(_ name: String, slots: Int32 = 1, held: [(UInt64, UInt32)] = []) throws -> [String] {
        try worker(name) {
            $0.register.protocolVersion = WireLimits.protocolVersion
            $0.register.workerName = name
            $0.register.slots = slots
            $0.register.held = held.map { ref in Opq_V1_AttemptRef.with { $0.operation = ref.0; $0.attempt = ref.1 } }
        }
    }

    /// Worker `name` reports that attempt `attempt` of `operation` started.
    mutating func started(_ name: String, _ operation: UInt64, attempt: UInt32 = 1, sequence: UInt64) throws -> [String] {
        try worker(name) {
            $0.reports.sequence = sequence
            $0.reports.items = [.with { $0.started = .with { $0.operation = operation; $0.attempt = attempt } }]
        }
    }

    /// Worker `name` reports that attempt `attempt` of `operation` ended with `status`, its command having
    /// written `stdout` and `stderr` bytes in all when given.
    mutating func finished(_ name: String, _ operation: UInt64, attempt: UInt32 = 1, status: Opq_V1_AttemptStatus = .succeeded,
                           exitCode: Int32 = 0, stdout: UInt64? = nil, stderr: UInt64? = nil, duration: Double = 0.5,
                           sequence: UInt64) throws -> [String] {
        try worker(name) {
            $0.reports.sequence = sequence
            $0.reports.items = [.with {
                $0.finished = .with {
                    $0.operation = operation
                    $0.attempt = attempt
                    $0.status = status
                    $0.exitCode = exitCode
                    $0.durationSeconds = duration
                    if let stdout { $0.stdout.totalBytes = stdout }
                    if let stderr { $0.stderr.totalBytes = stderr }
                }
            }]
        }
    }

    /// Worker `name` streams `text` as output of attempt `attempt` of `operation` from `offset` (report `sequence`).
    mutating func output(_ name: String, _ operation: UInt64, attempt: UInt32 = 1, stream: Opq_V1_OutputStream = .stdout,
                         offset: UInt64 = 0, _ text: String, sequence: UInt64) throws -> [String] {
        var message = Opq_V1_WorkerMessage()
        message.reports.sequence = sequence
        message.reports.items = [.with {
            $0.output = .with {
                $0.operation = operation
                $0.attempt = attempt
                $0.stream = stream
                $0.offset = offset
                $0.frame = 1
            }
        }]
        state.handleWorker(try Frames.encode(message, raw: [Array(text.utf8)], to: Array(name.utf8)), peerKey: nil, now: now)
        return state.takeActions().map(render)
    }

    /// Worker `name` (one slot) registers and runs job 1's only operation, op 1 (`name`), reported started.
    mutating func runOneOperation(on name: String = "w1") throws {
        _ = try register(name)
        _ = try submit(1, ["a"])
        _ = turn()
        _ = try started(name, 1, sequence: 1)
    }

    /// A request from the client connection `client`; returns the actions it caused at once.
    mutating func client(_ client: String = "alice", _ id: UInt64, _ fill: (inout Opq_V1_ClientRequest) -> Void) throws -> [String] {
        try clientActions(client, id, fill).map(render)
    }

    /// The same, the actions as they are.
    mutating func clientActions(_ client: String = "alice", _ id: UInt64, _ fill: (inout Opq_V1_ClientRequest) -> Void) throws -> [CoordinatorAction] {
        var request = Opq_V1_ClientRequest()
        request.requestID = id
        fill(&request)
        let frames = try Frames.encode(request, to: Array(client.utf8))
        if let decoded = state.decodeClient(frames) { state.handleClient(decoded, frames: frames, journalRefusal: nil, now: now) }
        return state.takeActions()
    }

    /// Submits commands named `names` (each depending on the ones listed in `after`) as one job.
    mutating func submit(_ id: UInt64, _ names: [String], after: [String: [String]] = [:], key: String = "",
                         client: String = "alice") throws -> [String] {
        try submitActions(id, names, after: after, key: key, client: client).map(render)
    }

    /// The same, the actions as they are.
    mutating func submitActions(_ id: UInt64, _ names: [String], after: [String: [String]] = [:], key: String = "",
                                client: String = "alice") throws -> [CoordinatorAction] {
        let specs = names.map { name in
            OperationSpec(name: name, work: .command(Command(["/bin/true", name])), dependencies: (after[name] ?? []).map(DependencyReference.name))
        }
        return try clientActions(client, id) { $0.submit = Opq_V1_Submit(Submission(specs), idempotencyKey: key) }
    }

    // MARK: - Time and turns

    /// Lets time pass to `time` and finishes the turn as the socket loop would, every send succeeding.
    mutating func turn(at time: Double? = nil) -> [String] {
        if let time { now = time }
        state.tick(now: now)
        var lines: [String] = []
        repeat {
            for action in state.finishTurn(now: now) {
                if case .commit = action { state.committed() }
                lines.append(render(action))
            }
        } while state.hasTurnWork
        return lines
    }

    // MARK: - Rendering

    func render(_ action: CoordinatorAction) -> String {
        switch action {
        case let .toWorker(id, message):
            return "→\(id) " + Self.describe(message)
        case let .orders(id, items):
            return "→\(id) " + items.map { order in
                switch order.kind {
                case .dispatch(let dispatch)?: "dispatch \(dispatch.operation)#\(dispatch.attempt)"
                case .kill(let kill)?: "kill \(kill.operation)#\(kill.attempt)"
                case nil: "?"
                }
            }.joined(separator: ", ")
        case let .toConnection(identity, message):
            return "→connection \(String(decoding: identity, as: UTF8.self)) " + Self.describe(message)
        case .reply(let frames):
            return "reply " + Self.describe(frames)
        case .notice(let frames):
            return "notice " + Self.describe(frames)
        case .refusal(let frames):
            return "refusal " + Self.describe(frames)
        case .journal(let entry):
            return "journal \(entry.summary)"
        case let .journalOutput(_, id):
            return "journal output of \(id)"
        case .commit:
            return "commit"
        case let .spoolOutput(chunk, _):
            return "spool \(chunk.operation)"
        case let .spoolFinished(id, attempt, _):
            return "spool finished \(id)#\(attempt)"
        case let .readOutput(read, requestID, _):
            return "read output \(read.operation) for \(requestID)"
        case let .prune(_, requestID, _):
            return "prune for \(requestID)"
        case .wakeAt(let time):
            return "wake at \(time)"
        }
    }

    static func describe(_ message: Opq_V1_CoordinatorToWorker) -> String {
        switch message.body {
        case .welcome?: "welcome"
        case .heartbeat?: "heartbeat"
        case .disconnect(let disconnect)?: "disconnect \(disconnect.code)"
        default: "\(message)"
        }
    }

    static func describe(_ frames: [[UInt8]]) -> String {
        guard let (identity, message, raw) = try? Frames.decodeRouted(frames, as: Opq_V1_CoordinatorToClient.self) else { return "undecodable" }
        let to = String(decoding: identity, as: UTF8.self)
        switch message.body {
        case .reply(let reply)?:
            let id = reply.requestID
            switch reply.result {
            case .submitted(let accepted)?:
                return "\(to) \(id) submitted job-\(accepted.job) \(accepted.operations)" + (accepted.duplicate ? " duplicate" : "")
            case .cancelled(let cancelled)?:
                return "\(to) \(id) cancelled \(cancelled.operations)"
            case .waited(let waited)?:
                return "\(to) \(id) waited" + (waited.timedOut ? " timed out" : "")
            case .error(let error)?:
                return "\(to) \(id) error \(error.message)"
            case .done?:
                return "\(to) \(id) done"
            case .reserved(let reserved)?:
                return "\(to) \(id) reserved \(reserved.ids.map { OperationID($0) }) lease \(reserved.leaseSeconds)"
            case .renewed(let renewed)?:
                return "\(to) \(id) renewed, gone \(renewed.gone.map { OperationID($0) }) lease \(renewed.leaseSeconds)"
            default:
                return "\(to) \(id) \(String(describing: reply.result))"
            }
        case .events(let events)?:
            return "\(to) events \(events.items.count)"
        case .output(let push)?:
            let text = String(decoding: push.bytes(in: raw), as: UTF8.self)
            return "\(to) output \(push.operation)#\(push.attempt) \(push.stream) @\(push.offset) \(text.debugDescription)"
        default:
            return "\(to) \(String(describing: message.body))"
        }
    }
}
