import HeapModule

/// The scheduling core of opq: the dependency graph, the queues and the workers' slots, as a pure
/// state machine (DESIGN.md "The core is a state machine").
///
/// Events come in as method calls, each with the time it happened; effects (dispatches, kills,
/// notifications, journal records) accumulate in ``effects`` until the shell takes them with
/// ``takeEffects()``. The core performs no I/O, reads no clock and starts no thread, so it is
/// tested by feeding events and asserting effects.
///
/// The rules it implements are SEMANTICS.md §2–§8; the README's "Lifecycle" section shows the states.
public struct Scheduler: Sendable {
    /// Tunables of the core.
    public struct Configuration: Sendable {
        /// A worker not heard from for this long is declared lost (3 missed 1-second heartbeats).
        public var workerTimeout: Double = 3
        /// How long after a worker is declared lost its attempts go back to `ready` (SEMANTICS §7,
        /// leases). The worker holds a lease of ``workerTimeout`` that it renews only by hearing the
        /// coordinator answer its own messages, so its lease has run out by the time the coordinator
        /// declares it lost; this margin covers killing what it runs (its lease watchdog sends SIGKILL to
        /// every process group at once), scheduling delays and the drift between the two monotonic clocks
        /// over one lease (at most 1 ms for a 3 s lease at 300 ppm). 0 = at once (tests of other rules).
        public var leaseMargin: Double = 1
        /// An operation that has lost this many workers finishes `failed` (reason: lost worker).
        public var maxLostWorkers = 3
        /// Backoff before the first retry; doubles with each further attempt.
        public var retryBackoff: Double = 1
        /// Longest backoff between retries.
        public var maxRetryBackoff: Double = 60

        /// The defaults of SEMANTICS §7.
        public init() {}
    }

    /// The configuration in force.
    public let configuration: Configuration

    /// Effects produced since the last ``takeEffects()``, in order.
    public internal(set) var effects: [Effect] = []

    /// Every operation ever accepted, indexed by `OperationID.index(below:)`.
    var operations: [OperationRecord] = []
    /// Every job, indexed by `JobID.index(below:)`.
    var jobs: [JobRecord] = []
    /// Finished, not yet pruned jobs in finish order (what `opq prune` walks).
    var finishedJobs = FinishedJobs()
    /// Jobs (entries of ``finishedJobs``) the prunes so far looked at: tests check a prune costs what it
    /// removes.
    public internal(set) var pruneVisits = 0
    /// Queues, by index; created on first use.
    var queues: [QueueRecord] = []
    /// Queue index by name.
    var queueIndex: [String: Int] = [:]
    /// Placement classes (label sets); index 0 is the empty set.
    var placements: [[String: String]] = [[:]]
    /// What the operations of each placement class need of a worker, by class index (see ``Resources``):
    /// a class is a label set and a demand, so the top of each ready heap stands for all of it.
    var placementNeeds: [Resources] = [.default]
    /// Placement class index by label set and demand.
    var placementIndex: [PlacementKey: Int] = [PlacementKey(labels: [:], needs: .default): 0]
    /// Workers, live ones and tombstones.
    var workers: [WorkerRecord] = []
    /// Index of each live worker by id.
    var workerIndex: [WorkerID: Int] = [:]
    /// Indexes of live workers, in join order.
    var liveWorkers: [Int] = []
    /// Free slots over all live workers.
    var freeSlots = 0
    /// Workers declared lost so far (``workersLost``).
    var lostWorkerCount = 0
    /// Ready non-empty operations over all queues.
    var readyLive = 0
    /// Retry and timeout deadlines (stale entries dropped when they come up).
    var timers = Heap<TimerEntry>()
    /// Next FIFO sequence number.
    var nextSequence: UInt64 = 0
    /// Operations to finish, processed iteratively so long cascades never recurse.
    var finishQueue: [(index: Int, outcome: Outcome, reason: FinishReason, report: AttemptReport?)] = []
    /// True while `finishQueue` is being drained.
    var isDrainingFinishes = false
    /// The time of the event being handled.
    var now: Timestamp = 0
    /// Reservations handed out and the forward edges onto those not submitted yet (Scheduler+Reservations).
    var reservations = Reservations()
    /// Scratch space for the dispatch loop.
    var candidates: [(key: UInt64, queue: Int, heap: Int)] = []

    /// Creates an empty core.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Returns the effects produced so far and clears them.
    public mutating func takeEffects() -> [Effect] {
        let taken = effects
        effects = []
        return taken
    }

    /// Moves the effects produced so far into `buffer` (replacing its contents) and gives the core the
    /// buffer's old storage to reuse: in a steady loop nothing is allocated.
    public mutating func takeEffects(into buffer: inout [Effect]) {
        buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 16)
        swap(&buffer, &effects)
    }

    /// Number of operations ever accepted.
    public var operationTotal: Int { operations.count }

    // MARK: - Small shared helpers

    func id(_ index: Int) -> OperationID { OperationID(index: index) }

    /// The index of `id`, or nil when no such operation exists.
    func index(of id: OperationID) -> Int? { id.index(below: operations.count) }

    /// The index of `id`, or nil when no such job exists (pruned ones included: see callers).
    func index(of id: JobID) -> Int? { id.index(below: jobs.count) }

    /// The queue named `name`, created with default settings if new.
    mutating func queue(named name: String) -> Int {
        if let index = queueIndex[name] { return index }
        let index = queues.count
        queues.append(QueueRecord(name: name))
        queueIndex[name] = index
        for worker in workers.indices {
            workers[worker].servesQueue.append(workers[worker].queueFilter?.contains(name) ?? true)
        }
        return index
    }

    /// The placement class of `labels` and `needs`, created if new.
    mutating func placement(for labels: [String: String], needs: Resources = .default) -> Int {
        let key = PlacementKey(labels: labels, needs: needs)
        if let index = placementIndex[key] { return index }
        let index = placements.count
        placements.append(labels)
        placementNeeds.append(needs)
        placementIndex[key] = index
        for worker in workers.indices {
            workers[worker].fitsPlacement.append(Scheduler.fits(labels, workers[worker].labels))
        }
        return index
    }

    static func fits(_ required: [String: String], _ offered: [String: String]) -> Bool {
        required.allSatisfy { offered[$0.key] == $0.value }
    }

    /// Emits a notification for operation `index` entering its current state.
    mutating func notify(_ index: Int, reason: FinishReason? = nil, report: AttemptReport? = nil, retryAt: Timestamp? = nil) {
        let worker = operations[index].worker
        effects.append(.notify(OperationEvent(
            operation: id(index), job: JobID(index: Int(operations[index].job)), state: operations[index].state,
            attempt: Int(operations[index].attempt), worker: worker >= 0 ? workers[Int(worker)].id : nil,
            outcome: operations[index].outcome,
            reason: reason, exitCode: report?.exitCode, signal: report?.signal,
            retryAt: retryAt, time: now, isCancelled: operations[index].isCancelled)))
    }

    /// Moves operation `index` to `state` (and `outcome`), keeping queue and job counts in step.
    mutating func setState(_ index: Int, _ state: OperationState, outcome: Outcome? = nil) {
        let oldState = operations[index].state, oldOutcome = operations[index].outcome
        operations[index].state = state
        operations[index].outcome = outcome
        guard !operations[index].isBarrier else { return }
        queues[Int(operations[index].queue)].counts.move(from: oldState, oldOutcome, to: state, outcome)
        jobs[Int(operations[index].job)].counts.move(from: oldState, oldOutcome, to: state, outcome)
    }
}
