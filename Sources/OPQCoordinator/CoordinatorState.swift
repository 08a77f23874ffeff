import Logging
import OPQCore
import OPQJournal
import OPQWire

/// The coordinator as a pure state machine (DESIGN.md "Coordinator shell as a state machine"): the
/// scheduling core and everything the shell keeps around it — worker sessions, watchers, waiters,
/// idempotency receipts, the client outbox, the turn's queued messages. Messages come in as frames
/// with the time they were read (``handleWorker(_:peerKey:now:)``, ``handleClient(_:now:journalRefusal:)``);
/// time passes with ``tick(now:)``; ``finishTurn(now:)`` returns the turn's actions in the order they
/// must be carried out (journal, commit, then sends, then the next wake-up). It owns no socket, file,
/// thread or clock: ``Coordinator`` is the socket loop that carries the actions out and reports back what
/// only a socket or a disk knows (``workerUnreachable(_:now:)``, ``keepForLater(_:refusal:)``,
/// ``forgetClient(_:)``, ``committed()``).
///
/// Turn phases, in order: handle messages (each may queue immediate actions, taken with
/// ``takeActions()``); ``tick(now:)``; ``finishTurn(now:)``; then, while ``hasTurnWork`` (a send failed
/// and the core reacted), ``finishTurn(now:)`` again.
struct CoordinatorState {
    /// The settings in force (heartbeats, liveness, kill grace, recovery grace, budgets).
    let configuration: CoordinatorConfiguration
    /// Where the state machine says what it decided (a value; tests pass one that logs nothing).
    var logger: Logger
    /// Identifies this coordinator instance to workers.
    let instanceID: String
    /// Whether records are journaled (a state directory is in use).
    let isDurable: Bool
    /// Makes a session secret (random bytes; tests inject a fixed source).
    let makeSecret: () -> [UInt8]

    /// The scheduling core.
    var core: Scheduler
    /// Registered workers by name.
    var sessions: [WorkerID: WorkerSession] = [:]
    /// The worker each session's connection (routing id) belongs to.
    var workerIdentities: [[UInt8]: WorkerID] = [:]
    /// Event streams by client and watch.
    var watchers: [Watcher.Key: Watcher] = [:]
    /// Clients waiting for an operation, a job or a queue to finish.
    var waiters: [Waiter] = []
    /// Receipts of submissions that carried an idempotency key.
    var receipts: [String: SubmissionReceipt] = [:]
    /// Numbered events, kept for watchers that resume.
    var events: EventLog
    /// The last finish report of each operation (exit status, output tails), in memory.
    var outputs: OutputStore
    /// Handlers' results, apart from the output (``keep(_:for:)``).
    var results = ResultStore()
    /// How far the output of each running attempt that wrote some has come (``noteRunningOutput(_:count:)``).
    var runningOutput: [OperationID: RunningOutput] = [:]
    /// Messages clients could not take yet (``ClientOutbox``: never drops a reply to an applied request;
    /// refuses requests from a client that does not read its replies).
    var clientBacklog: ClientOutbox
    /// The public keys admitted per socket (CURVE); the loop replaces them on SIGHUP.
    var authorizedKeys = AuthorizedKeys()
    /// When each finished job finished (seconds since 1970), for `prune --older-than`.
    var jobFinishedAt: [JobID: Double] = [:]
    /// While attempts recovered from the journal wait for their workers: when they get a new attempt.
    var recoveryDeadline: Double?
    /// The leases of open reservations (``ReservationLeases``).
    var leases = ReservationLeases()
    /// The wall clock (seconds since 1970) of the turn, set by the loop: stamps finished jobs.
    var wallTime = 0.0

    /// The core's effects being absorbed (storage reused every turn).
    var effects: [Effect] = []
    /// Actions to carry out as soon as the handler returns (refusals, disconnects, spool writes).
    var actions: [CoordinatorAction] = []
    /// Records to journal in the turn's transaction.
    var journalEntries: [JournalEntry] = []
    /// Orders to send each worker at the end of the turn.
    var orders: [WorkerID: [Opq_V1_Order]] = [:]
    /// Messages to send workers (Welcome, heartbeats) at the end of the turn.
    var workerOutbox: [(WorkerID, Opq_V1_CoordinatorToWorker)] = []
    /// Replies to send clients at the end of the turn, after the turn's journal commit.
    var clientOutbox: [[[UInt8]]] = []
    /// True when something finished this turn (waiters need a look).
    var somethingFinished = false
    /// When the first watch events held back (``Watcher/eventDelay``) are due; nil = none held.
    var heldEventsDue: Double?
    /// The stimulus being handled; the events it causes carry it (``begin(_:)``).
    var cause = Cause.start
    /// The id of the latest stimulus.
    var lastCause: UInt64 = 0
    /// The logger's `cause` metadata (``CauseLabel``).
    let causeLabel = CauseLabel()

    init(configuration: CoordinatorConfiguration, core: Scheduler, instanceID: String, isDurable: Bool, logger: Logger,
         makeSecret: @escaping () -> [UInt8]) {
        self.configuration = configuration
        self.core = core
        self.instanceID = instanceID
        self.isDurable = isDurable
        self.logger = logger
        self.logger[metadataKey: "cause"] = .stringConvertible(causeLabel)
        self.makeSecret = makeSecret
        events = EventLog(capacity: configuration.eventHistory, byteBudget: configuration.eventHistoryBytes)
        outputs = OutputStore(budget: configuration.outputBudget)
        clientBacklog = ClientOutbox(maxMessages: configuration.clientBacklogMessages, maxBytes: configuration.clientBacklogBytes)
    }

    /// Seconds between retries of replies a client could not take yet.
    static let backlogRetryInterval = 0.01

    /// The actions queued since the last call (carried out at once, before the next message).
    mutating func takeActions() -> [CoordinatorAction] {
        // Swapped out, not copied and emptied: emptying an array whose storage the caller now shares
        // allocates new storage, at every message (most take no action at all).
        var taken: [CoordinatorAction] = []
        swap(&taken, &actions)
        return taken
    }

    /// Time passes: the core's deadlines, the recovery grace period, lost sessions, heartbeats due, waits
    /// that timed out, reservations whose lease ran out.
    mutating func tick(now: Double) {
        begin(.timer)
        core.tick(at: now)
        checkRecoveryGrace(now: now)
        dropLostSessions()
        sendHeartbeats(now: now)
        expireWaiters(now: now)
        expireReservations(now: now)
    }

    /// Ends the turn: the core's effects are absorbed, and the actions come out in the order that keeps
    /// SEMANTICS §10: the turn's records and their commit, then worker messages and orders, then watch
    /// events and answered waits, then replies, then the next wake-up.
    mutating func finishTurn(now: Double) -> [CoordinatorAction] {
        absorbEffects()
        var out = takeActions()
        // One allocation for the turn's actions as far as they are known here (the commit, the wake-up and
        // a notice included). Not one slot per watcher: with thousands of watchers, most turns notify none of them,
        // and a turn that notifies many grows the array once.
        out.reserveCapacity(out.count + journalEntries.count + 1 + workerOutbox.count + orders.count + clientOutbox.count + 2)
        out += journalEntries.map(CoordinatorAction.journal)
        journalEntries.removeAll(keepingCapacity: true)
        out.append(.commit)
        for (id, message) in workerOutbox { out.append(.toWorker(id, message)) }
        workerOutbox.removeAll(keepingCapacity: true)
        for (id, items) in orders.sorted(by: { $0.key.name < $1.key.name }) where !items.isEmpty { out.append(.orders(id, items)) }
        orders.removeAll(keepingCapacity: true)
        for frames in watcherEvents(now: now) { out.append(.notice(frames)) }
        if somethingFinished {
            somethingFinished = false
            for frames in satisfiedWaits() { out.append(.notice(frames)) }
        }
        out += clientOutbox.map(CoordinatorAction.reply)
        clientOutbox.removeAll(keepingCapacity: true)
        out.append(.wakeAt(nextWakeUp(now: now)))
        return out
    }

    /// Whether the turn must be finished again: the core reacted to a send that failed.
    var hasTurnWork: Bool { !core.effects.isEmpty || !workerOutbox.isEmpty || !clientOutbox.isEmpty || !actions.isEmpty }

    /// When the loop must wake at the latest: the core's next deadline, a heartbeat due, a wait's
    /// timeout, the end of the recovery grace period, a retry of the client backlog, a lease running out,
    /// watch events held back.
    func nextWakeUp(now: Double) -> Double {
        var deadline = now + configuration.heartbeatInterval
        if let next = core.nextDeadline { deadline = min(deadline, next) }
        var index = sessions.values.startIndex  // in place, as in `sendHeartbeats`
        while index != sessions.values.endIndex {
            deadline = min(deadline, sessions.values[index].lastSent + configuration.heartbeatInterval)
            sessions.values.formIndex(after: &index)
        }
        for waiter in waiters { if let timeout = waiter.deadline { deadline = min(deadline, timeout) } }
        if let recovery = recoveryDeadline { deadline = min(deadline, recovery) }
        deadline = min(deadline, leases.nextCheck)
        if !clientBacklog.isEmpty { deadline = min(deadline, now + Self.backlogRetryInterval) }
        if let held = heldEventsDue { deadline = min(deadline, held) }
        return deadline
    }

    /// The journal committed everything of the turn (or there is no journal): every report received so
    /// far is durable, and the workers are told so with the next message they are sent.
    mutating func committed() {
        // In place, through the values (no session copied, no key looked up again; see `route`).
        var index = sessions.values.startIndex
        while index != sessions.values.endIndex {
            if sessions.values[index].reportsDurable < sessions.values[index].reportsReceived {
                sessions.values[index].reportsDurable = sessions.values[index].reportsReceived
            }
            sessions.values.formIndex(after: &index)
        }
    }

    /// Starts the grace period for attempts recovered from the journal (their workers reconnect and say
    /// what they still hold); called once when the loop starts.
    mutating func startRecoveryGrace(now: Double) {
        guard isDurable, core.recoveringAttempts > 0 else { return }
        recoveryDeadline = now + configuration.recoveryGrace
        logger.info("waiting for workers to report recovered attempts", metadata: [
            "attempts": "\(core.recoveringAttempts)", "grace.seconds": "\(configuration.recoveryGrace)",
        ])
    }

    /// Ends the grace period when it is over, or as soon as every recovered attempt was reconciled.
    mutating func checkRecoveryGrace(now: Double) {
        guard let deadline = recoveryDeadline else { return }
        let left = core.recoveringAttempts
        guard left == 0 || now >= deadline else { return }
        if left > 0 {
            logger.warning("recovered attempts not reported by their workers get a new attempt", metadata: ["attempts": "\(left)"])
        }
        core.endRecovery(at: now)
        recoveryDeadline = nil
    }
}
