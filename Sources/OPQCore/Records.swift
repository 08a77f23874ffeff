import HeapModule

/// A dependency edge, packed into 8 bytes: the other operation's index, and whether the edge is
/// implicit (made by a barrier). Implicit edges are satisfied by any outcome, whatever `requires` says.
struct Edge: Hashable {
    private let raw: UInt64
    private static let implicitBit: UInt64 = 1 << 63

    init(_ index: Int, implicit: Bool) {
        raw = UInt64(index) | (implicit ? Edge.implicitBit : 0)
    }

    /// The other end's index in `Scheduler.operations`.
    var index: Int { Int(truncatingIfNeeded: raw & ~Edge.implicitBit) }
    /// Made by a barrier rather than by the submitter.
    var isImplicit: Bool { raw & Edge.implicitBit != 0 }
}

/// The core's record of one operation. Stored densely, indexed by `OperationID.index(below:)`.
struct OperationRecord {
    /// Submitter's name (unique within the job, may be empty).
    var name: String
    /// What it does.
    var work: Work
    /// Operations it depends on (explicit and barrier edges), in the order they were added.
    var dependencies = EdgeList()
    /// Operations that depend on it.
    var dependants = EdgeList()
    /// FIFO key within a priority level: submission order; renewed when the priority changes.
    var sequence: UInt64
    /// Seconds an attempt may execute; 0 = no limit.
    var timeout: Double
    /// When the current attempt started executing.
    var startedAt: Timestamp = 0
    /// Its job's index.
    var job: UInt32
    /// Its queue's index.
    var queue: UInt32
    /// Its placement class's index (0 = no labels).
    var placement: UInt32
    /// Index of the worker holding the current attempt, or -1.
    var worker: Int32 = -1
    /// Position in that worker's `held` list.
    var heldPosition: UInt32 = 0
    /// Current attempt number; incremented by each dispatch.
    var attempt: UInt32 = 0
    /// Dependencies that have not finished.
    var unfinishedDependencies: UInt32 = 0
    /// Failed attempts that may still be retried.
    var retriesLeft: UInt32
    /// Validity token of this operation's ready-heap entry; bumped whenever it leaves `ready`.
    var heapToken: UInt32 = 0
    /// Lifecycle state.
    var state: OperationState = .pending
    /// How it finished, once finished.
    var outcome: Outcome?
    /// Why it finished (or why its last attempt ended).
    var reason: FinishReason?
    /// Dispatch priority.
    var priority: QueuePriority
    /// Niceness on the worker.
    var qualityOfService: QualityOfService
    /// What it needs of its dependencies.
    var requires: Requirement
    /// A barrier of its queue.
    var isBarrier: Bool
    /// Foundation's `isCancelled`: set by a cancel request, kept forever.
    var isCancelled = false
    /// Set when a kill was sent for the current attempt.
    var killReason: KillReason?
    /// Workers lost while holding it.
    var lostWorkers: UInt8 = 0
    /// Pending because a failed attempt's backoff has not elapsed.
    var isWaitingForRetry = false
}

/// An entry of a ready heap: smaller key = dispatched first.
struct ReadyEntry: Comparable {
    /// Priority rank in the top bits, sequence below.
    let key: UInt64
    /// The operation's index.
    let index: UInt32
    /// Must equal the operation's `heapToken` for the entry to be live.
    let token: UInt32

    static func key(priority: QueuePriority, sequence: UInt64) -> UInt64 {
        UInt64(8 - Int(priority.rawValue)) << 56 | sequence
    }

    static func < (lhs: ReadyEntry, rhs: ReadyEntry) -> Bool { lhs.key < rhs.key }
    static func == (lhs: ReadyEntry, rhs: ReadyEntry) -> Bool { lhs.key == rhs.key && lhs.index == rhs.index }
}

/// The ready operations of one queue that share one placement class. Stale entries are dropped lazily.
struct ReadyHeap {
    /// The placement class every entry shares.
    let placement: UInt32
    /// Entries, live and stale.
    var heap = ReadyQueue()
    /// Live entries.
    var live = 0
}

/// The core's record of a named queue.
struct QueueRecord {
    /// Its name.
    let name: String
    /// -1 = no limit, 0 = hold, N = at most N dispatched or executing.
    var maxConcurrent = -1
    /// While true nothing is dispatched.
    var isSuspended = false
    /// Operations dispatched or executing.
    var active = 0
    /// Ready non-empty operations, one heap per placement class used.
    var heaps: [ReadyHeap] = []
    /// Live entries over all heaps.
    var readyLive = 0
    /// Ready empty operations held by suspension or `maxConcurrent == 0` (may hold stale ids).
    var heldEmpty: [Int] = []
    /// Unfinished operations in submission order, barriers included; finished ones are removed lazily.
    var members: [Int] = []
    /// Unfinished operations, barriers included.
    var unfinished = 0
    /// Unfinished barriers, in submission order.
    var unfinishedBarriers: [Int] = []
    /// Counts by state, barriers excluded.
    var counts = OperationCounts()

    init(name: String) { self.name = name }

    /// Not suspended and not held by `maxConcurrent == 0`.
    var isRunning: Bool { !isSuspended && maxConcurrent != 0 }
    /// May dispatch one more operation now.
    var hasCapacity: Bool { isRunning && (maxConcurrent < 0 || active < maxConcurrent) }
}

/// The core's record of a job (one submission).
struct JobRecord {
    /// Index of its first operation; its operations are contiguous.
    let first: Int
    /// Number of operations, barriers included.
    let count: Int
    /// Unfinished operations, barriers included.
    var unfinished: Int
    /// Counts by state, barriers excluded.
    var counts = OperationCounts()
    /// Pruned (`opq prune`): only its id range is kept.
    var isPruned = false
}

/// The core's record of a worker.
struct WorkerRecord {
    /// Its routing id.
    let id: WorkerID
    /// Its local `maxConcurrentOperationCount`.
    var slots: Int
    /// Indexes of the operations it holds (dispatched or executing), in no order; each operation's
    /// `heldPosition` is its place here, so removal is O(1) without hashing.
    var held: [Int] = []
    /// Queues it serves; nil = all.
    var queueFilter: Set<String>?
    /// Its placement labels.
    var labels: [String: String]
    /// CPUs it offers (``Resources/cpus``); its slot count when it announced none.
    var cpus = 0
    /// Bytes of memory it offers; `Int.max` when it announced none (memory is then not checked).
    var memory = Int.max
    /// CPUs of the operations it holds.
    var usedCpus = 0
    /// Memory of the operations it holds (wrapping arithmetic: exact while it stays within ``memory``).
    var usedMemory = 0
    /// When it was last heard from.
    var lastSeen: Timestamp
    /// False once it left or was lost; the record then stays as a tombstone.
    var isAlive = true
    /// Lost, and what it held waits for its lease to run out (``Scheduler/Configuration/leaseMargin``):
    /// a tombstone that still holds attempts until their lease timers fire.
    var isFenced = false
    /// Whether it serves each queue, by queue index.
    var servesQueue: [Bool] = []
    /// Whether its labels satisfy each placement class, by class index.
    var fitsPlacement: [Bool] = []

    /// Slots not taken (never negative, even after the slot count was lowered).
    var free: Int { max(0, slots - held.count) }
}

/// A deadline the core waits for.
struct TimerEntry: Comparable {
    /// `retry`: a failed attempt's backoff is over; `timeout`: an executing attempt ran too long;
    /// `lease`: the lease of a lost worker's attempt has surely run out on the worker's side.
    enum Kind: UInt8 { case retry, timeout, lease }
    let deadline: Timestamp
    let index: UInt32
    let attempt: UInt32
    let kind: Kind

    static func < (lhs: TimerEntry, rhs: TimerEntry) -> Bool {
        (lhs.deadline, lhs.index, lhs.kind.rawValue) < (rhs.deadline, rhs.index, rhs.kind.rawValue)
    }
}

/// A list of edges that stores a single edge inline: most operations have zero or one dependency and
/// zero or one dependant, and a chain of a million operations then allocates nothing per edge.
enum EdgeList: Sequence {
    case none
    case one(Edge)
    case many([Edge])

    init() { self = .none }

    var count: Int {
        switch self {
        case .none: 0
        case .one: 1
        case .many(let edges): edges.count
        }
    }

    mutating func append(_ edge: Edge) {
        switch self {
        case .none: self = .one(edge)
        case .one(let first): self = .many([first, edge])
        case .many(var edges):
            self = .none  // keep the array uniquely referenced while appending
            edges.append(edge)
            self = .many(edges)
        }
    }

    /// Removes the first occurrence of `edge`; returns whether there was one.
    @discardableResult
    mutating func removeFirst(_ edge: Edge) -> Bool {
        switch self {
        case .none: return false
        case .one(let only):
            guard only == edge else { return false }
            self = .none
            return true
        case .many(var edges):
            guard let position = edges.firstIndex(of: edge) else { return false }
            self = .none
            edges.remove(at: position)
            self = edges.isEmpty ? .none : edges.count == 1 ? .one(edges[0]) : .many(edges)
            return true
        }
    }

    /// Iterates without allocating for the inline cases.
    struct Iterator: IteratorProtocol {
        var single: Edge?
        var rest: IndexingIterator<[Edge]>?

        mutating func next() -> Edge? {
            if let edge = single {
                single = nil
                return edge
            }
            return rest?.next()
        }
    }

    func makeIterator() -> Iterator {
        switch self {
        case .none: Iterator(single: nil, rest: nil)
        case .one(let edge): Iterator(single: edge, rest: nil)
        case .many(let edges): Iterator(single: nil, rest: edges.makeIterator())
        }
    }
}
