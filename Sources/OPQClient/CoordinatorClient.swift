import OPQCore
import OPQWire
import ZeroMQ

/// A typed, synchronous connection to a coordinator for programs that ask and act: submit, inspect,
/// cancel, configure, read output, wait and watch. The `opq` command line is built on it.
///
/// ``RemoteCoordinator`` is the other way in: Foundation's `OperationQueue` model with a thread and an
/// event stream of its own. A `CoordinatorClient` has no thread: every call runs on the caller's, and
/// waits (``wait(for:timeout:interruption:)``, ``nextWatchUpdate(until:interruption:)``) block on the
/// socket until the coordinator answers, an ``Interruption`` descriptor turns readable, or a deadline
/// passes — never in polling slices.
///
/// ```swift
/// let client = try CoordinatorClient(endpoint: "tcp://127.0.0.1:7131")
/// let receipt = try client.submit(Submission([OperationSpec(name: "a", work: .command(Command(["true"])))]))
/// _ = try client.wait(for: .job(receipt.job), timeout: nil)
/// print(try client.job(receipt.job).operations.map(\.outcome))
/// ```
///
/// Use from one thread at a time.
public final class CoordinatorClient {
    let connection: CoordinatorConnection
    /// The endpoint connected to.
    public var endpoint: String { connection.endpoint }
    /// The current watch: its request id and what it watches (``watch(_:)``).
    var currentWatch: (id: UInt64, scope: WatchScope, includeOutput: Bool, eventDelay: Double)?
    /// The coordinator instance that accepted the current watch (it changes when the coordinator restarts).
    var watchInstance: String?
    /// When the current watch last heard from the coordinator (or was checked).
    var watchHeard = ContinuousClock.now
    /// How long a watch goes without any message before it asks the coordinator whether it still holds
    /// the watch (``nextWatchUpdate(until:interruption:)``): so a watch without a deadline notices a
    /// coordinator that restarted (and forgot it) within this plus one request's round trip.
    public var watchCheckSeconds: Double = 5
    /// Sequence of the last event of the current watch (nil until its snapshot came).
    var lastSequence: UInt64?
    /// The longest a single Wait request asks the coordinator to hold (``wait(for:timeout:interruption:)``):
    /// the bound on how long a wait goes on talking to a coordinator that restarted, plus 10 s.
    public var waitSliceSeconds: Double = 30
    /// How long ``ping(timeout:)`` waits for an answer before it asks again.
    public var pingResendSeconds: Double = 1

    /// Connects (lazily: ZeroMQ connects in the background; the first request waits for it). Call
    /// ``ping(timeout:)`` to learn at once whether a coordinator answers.
    ///
    /// With `directZMTP`, a connection without CURVE keys to `ipc://` or `tcp://127.x.x.x` speaks ZMTP
    /// itself instead of through libzmq (``ZeroMQ/ZMTPDealer``): libzmq is not even loaded, no thread is
    /// started — for a command that asks a question or two and exits (`opq status`). It does not
    /// reconnect after a lost connection (the request fails with ``ClientError/connection(_:)``), so it
    /// is not for watches or long waits.
    /// - Throws: ``ClientError/transport(_:)`` for an invalid endpoint or key.
    public init(endpoint: String, security: ConnectionSecurity = .none, directZMTP: Bool = false) throws(ClientError) {
        if directZMTP, let direct = CoordinatorConnection(directEndpoint: endpoint, security: security) {
            connection = direct
            return
        }
        do {
            connection = try CoordinatorConnection(endpoint: endpoint, security: security)
        } catch {
            throw .transport(error)
        }
    }

    /// One cheap round trip: returns when the coordinator answered.
    ///
    /// Asked again every ``pingResendSeconds`` without an answer (any answer will do; later ones are
    /// dropped): a request that reached a coordinator just before it died is lost with its connection,
    /// and the one restarted on the endpoint must still be found within `timeout`.
    /// - Throws: ``ClientError/timeout(endpoint:seconds:)`` (or ``ClientError/keyNotAccepted(endpoint:seconds:reason:)``)
    ///   when none did within `timeout` seconds.
    public func ping(timeout: Double = 10) throws(ClientError) {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        var sent: [UInt64] = []
        var answered: UInt64?
        defer { connection.abandon(sent.filter { $0 != answered }) }
        while true {
            sent.append(try connection.send(until: deadline, { $0.listQueues = Opq_V1_ListQueues() }, timeout: timeout))
            let again = min(deadline, ContinuousClock.now + .milliseconds(Int(pingResendSeconds * 1000)))
            switch try connection.awaitReply(anyOf: sent, until: again, wake: nil) {
            case .reply(let reply, _):
                answered = reply.requestID
                return
            case .timedOut, .woken:
                if ContinuousClock.now >= deadline { throw connection.noAnswer(timeout) }
            }
        }
    }

    // MARK: Submitting and changing

    /// Submits `submission` as one job, accepted whole or refused whole. A non-empty `idempotencyKey`
    /// makes a resend after a timeout return the first acceptance instead of adding the job twice.
    public func submit(_ submission: Submission, idempotencyKey: String = "", timeout: Double = 30) throws(ClientError) -> JobReceipt {
        // Encoded one operation at a time: a big job file never exists as protobuf messages all at once.
        JobReceipt(try connection.request(timeout: timeout) { (id) throws(WireError) in
            try Opq_V1_ClientRequest.encodedSubmit(id, submission, idempotencyKey: idempotencyKey)
        }.reply.submitted)
    }

    /// Cancels `target` (SEMANTICS §5); returns the operations it cancelled (unfinished at that moment).
    @discardableResult
    public func cancel(_ target: CancelTarget, timeout: Double = 10) throws(ClientError) -> [OperationID] {
        try connection.request(timeout: timeout) {
            switch target {
            case .operation(let id): $0.cancel.operation = id.rawValue
            case .job(let id): $0.cancel.job = id.rawValue
            case .queue(let name): $0.cancel.queue = name
            case .all: $0.cancel.all = Opq_V1_All()
            }
        }.reply.cancelled.operations.map(OperationID.init)
    }

    /// Changes queue `name`'s settings (creating the queue); fields left nil stay as they are.
    /// - Throws: the coordinator's refusal for a `maxConcurrent` below -1.
    public func configureQueue(_ name: String, _ settings: QueueSettings) throws(ClientError) {
        try connection.request { $0.setQueue = Opq_V1_QueueSettings(queue: name, settings) }
    }

    /// Moves operation `id` to `priority` (to the back of that level, SEMANTICS §4).
    public func setPriority(of id: OperationID, to priority: QueuePriority) throws(ClientError) {
        try connection.request {
            $0.setPriority.operation = id.rawValue
            $0.setPriority.priority = priority.wireValue
        }
    }

    /// Forgets finished jobs (those finished at least `olderThan` seconds ago; nil = all of them).
    public func prune(olderThan: Double? = nil) throws(ClientError) -> PruneResult {
        let pruned = try connection.request {
            $0.prune = Opq_V1_Prune()
            if let olderThan { $0.prune.olderThanSeconds = olderThan }
        }.reply.pruned
        return PruneResult(jobs: pruned.jobs.map(JobID.init), operations: Int(pruned.operations))
    }

    // MARK: Asking

    /// Everything known about operation `id`, with its output tails when `includeOutput`.
    public func operation(_ id: OperationID, includeOutput: Bool = false, includeStory: Bool = false) throws(ClientError) -> OperationStatus {
        let (reply, raw) = try connection.request {
            $0.getOperation.operation = id.rawValue
            $0.getOperation.includeOutput = includeOutput
            $0.getOperation.includeStory = includeStory
        }
        return OperationStatus(reply.operation, raw: raw)
    }

    /// Job `id`, with every operation's status when `includeOperations`.
    public func job(_ id: JobID, includeOperations: Bool = true) throws(ClientError) -> JobStatus {
        JobStatus(try connection.request {
            $0.getJob.job = id.rawValue
            $0.getJob.includeOperations = includeOperations
        }.reply.job)
    }

    /// Job `id` with its end-of-run report (``JobStatus/summary``) listing up to `slowest` of the
    /// operations that ran longest (at most 100), without every operation's status: nil summary from a
    /// coordinator that makes none (an older one), whose caller then asks for the operations.
    public func jobSummary(_ id: JobID, slowest: Int) throws(ClientError) -> JobStatus {
        JobStatus(try connection.request {
            $0.getJob.job = id.rawValue
            $0.getJob.summarySlowest = UInt32(clamping: min(max(0, slowest), Int(WireLimits.maxSummarySlowest)))
        }.reply.job)
    }

    /// Every job the coordinator holds, oldest first (without operation details).
    public func jobs() throws(ClientError) -> [JobStatus] {
        var jobs: [JobStatus] = []
        var after: UInt64 = 0
        while true {
            let page = try connection.request { $0.listJobs.after = after }.reply.jobs
            jobs += page.jobs.map(JobStatus.init)
            guard page.more, let last = page.jobs.last else { return jobs }
            after = last.id
        }
    }

    /// Every queue's settings and counts.
    public func queues() throws(ClientError) -> [QueueStatus] {
        try connection.request { $0.listQueues = Opq_V1_ListQueues() }.reply.queues.queues.map(QueueStatus.init)
    }

    /// The operations `filter` selects, in submission order (every page of them).
    public func operations(_ filter: OperationFilter = OperationFilter()) throws(ClientError) -> [OperationStatus] {
        var request = Opq_V1_ListOperations()
        if let queue = filter.queue { request.queue = queue }
        request.states = filter.states.map(Opq_V1_OperationState.init)
        if let job = filter.job { request.job = job.rawValue }
        var operations: [OperationStatus] = []
        while true {
            let page = try connection.request { $0.listOperations = request }.reply.operations
            operations += page.operations.map { OperationStatus($0) }
            guard page.more, let last = page.operations.last else { return operations }
            request.after = last.id
        }
    }

    /// The live workers, in join order.
    public func workers() throws(ClientError) -> [WorkerStatus] {
        try connection.request { $0.listWorkers = Opq_V1_ListWorkers() }.reply.workers.workers.map(WorkerStatus.init)
    }
}

/// What makes a blocking wait of ``CoordinatorClient`` return early: a file descriptor that turns
/// readable (a signal handler's self-pipe, say), and a check run each time it does.
public struct Interruption {
    /// Watched for readability next to the connection's socket.
    public var fileDescriptor: Int32
    /// Called when ``fileDescriptor`` is readable; true = stop waiting. It should consume what made the
    /// descriptor readable (drain the pipe) before it looks at the condition, so no wake-up is lost.
    public var shouldStop: () -> Bool

    /// An interruption on `fileDescriptor`, decided by `shouldStop`.
    public init(fileDescriptor: Int32, shouldStop: @escaping () -> Bool) {
        self.fileDescriptor = fileDescriptor
        self.shouldStop = shouldStop
    }
}
