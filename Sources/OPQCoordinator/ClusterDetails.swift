import OPQWire

/// Something too large to put in every ``ClusterSnapshot``, built by the loop only when a reader asks
/// (``SnapshotPublisher/detail(_:within:)``), with the next snapshot.
public enum DetailRequest: Hashable, Sendable {
    /// A job's dependency graph, coloured by state (``JobGraph``).
    case graph(job: UInt64)
    /// An operation's causal timeline (``OperationStory``).
    case story(operation: UInt64)
}

/// The loop's answer to a ``DetailRequest``.
public enum Detail: Sendable {
    case graph(JobGraph)
    case story(OperationStory)
    /// The job or operation is unknown (never submitted, or pruned).
    case unknown
}

/// A job's operations as a layered graph: layer 0 holds the operations with no dependency inside the job,
/// layer k those whose longest chain of dependencies inside the job is k long. Bounded for big jobs: at
/// most ``maxOperations`` are laid out, ``maxNodesPerLayer`` shown per layer and ``maxLayers`` layers;
/// the rest is counted by state.
public struct JobGraph: Sendable, Codable {
    /// Operations laid out, at most (the job's first ones).
    public static let maxOperations = 10_000
    /// Nodes shown per layer, at most.
    public static let maxNodesPerLayer = 40
    /// Layers shown, at most.
    public static let maxLayers = 50

    public var job: UInt64
    /// Its operations, barriers included.
    public var operations: Int
    /// How many of them were laid out (fewer than `operations` beyond ``maxOperations``).
    public var laidOut: Int
    /// Layers in dependency order.
    public var layers: [GraphLayer]
    /// Dependencies between shown nodes: `from` must finish before `to`.
    public var edges: [GraphEdge]
    /// Layers not shown (beyond ``maxLayers``), and the operations in them by state.
    public var hiddenLayers: Int
    public var hiddenLayerStates: [String: Int]
    /// When it was built (Unix seconds).
    public var time: Double
}

/// One layer of a ``JobGraph``.
public struct GraphLayer: Sendable, Codable {
    public var index: Int
    /// The first ``JobGraph/maxNodesPerLayer`` operations of the layer, by id.
    public var nodes: [GraphNode]
    /// Operations of the layer not shown, by state.
    public var hiddenStates: [String: Int]
}

/// An operation in a ``JobGraph``.
public struct GraphNode: Sendable, Codable {
    public var id: UInt64
    public var name: String
    /// `pending`, `ready`, `dispatched`, `executing`, or the outcome of a finished one: `succeeded`,
    /// `failed`, `cancelled`.
    public var state: String
    public var attempt: Int
    public var worker: String?
    public var isBarrier: Bool
}

/// A dependency edge of a ``JobGraph``.
public struct GraphEdge: Sendable, Codable, Hashable {
    public var from: UInt64
    public var to: UInt64
}

/// What happened to one operation, in order, from the coordinator's event log: submitted, ready,
/// dispatched to a worker (attempt n), started, progress, and how each attempt ended (retried,
/// requeued because its worker was lost, finished) with the reason.
public struct OperationStory: Sendable, Codable {
    /// Entries kept, at most (the first ``keptFirst`` and the most recent ones).
    public static let maxEntries = 1_000
    static let keptFirst = 100

    public var operation: UInt64
    public var name: String
    public var job: UInt64
    public var queue: String
    /// Its state now (as ``GraphNode/state``), and its current attempt.
    public var state: String
    public var attempt: Int
    /// Dependencies (explicit ones).
    public var dependencies: [UInt64]
    public var entries: [StoryEntry]
    /// Entries left out in the middle of a very long story (progress floods).
    public var omitted: Int
    /// False when the story does not start with the submission (the coordinator restarted since: a story
    /// is kept in memory, from the first transition the coordinator saw).
    public var isComplete: Bool
}

/// One step of an ``OperationStory``.
public struct StoryEntry: Sendable, Codable {
    /// The event's number in the coordinator's log (the causal order).
    public var sequence: UInt64
    /// When (Unix seconds); nil for progress reports, which carry no time.
    public var time: Double?
    /// `submitted`, `ready`, `dispatched`, `started`, `progress`, `retry`, `requeued`, `pending`,
    /// `cancelling` (a cancel reached it while it ran), `succeeded`, `failed`, `cancelled`.
    public var event: String
    public var attempt: Int
    public var worker: String?
    /// The step in words, with its reason.
    public var text: String
    /// What caused it: the id and kind of the message or timer it followed from ("#42 worker report").
    public var cause: String? = nil
}

extension Opq_V1_StoryStep {
    /// `entry` as it travels to a client (`opq show --story`).
    init(_ entry: StoryEntry) {
        self.init()
        sequence = entry.sequence
        if let time = entry.time { self.time = time }
        event = entry.event
        attempt = UInt32(clamping: entry.attempt)
        worker = entry.worker ?? ""
        text = entry.text
        cause = entry.cause ?? ""
    }
}
