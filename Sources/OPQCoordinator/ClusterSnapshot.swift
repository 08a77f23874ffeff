import OPQCore

/// What the coordinator's loop publishes for readers on other threads (the HTTP metrics endpoint and
/// the dashboard): an immutable value, built on the loop thread at most every
/// ``SnapshotPublisher/interval`` seconds and swapped in under a lock held only for the swap.
///
/// Times are Unix seconds on the coordinator's clock. Counters (`…Total`) count from the coordinator's
/// start; gauges describe the moment of ``time``. The JSON form (Codable) is the dashboard's `/api`.
public struct ClusterSnapshot: Sendable, Codable {
    /// When it was built.
    public var time: Double
    /// When the coordinator started.
    public var startedAt: Double
    /// Number of this snapshot (1, 2, …): a reader that saw this number has nothing new to read.
    public var sequence: UInt64
    /// The workers endpoint as bound.
    public var workersEndpoint: String
    /// The clients endpoint as bound.
    public var clientsEndpoint: String
    /// Unfinished jobs and the most recently finished ones, oldest first.
    public var jobs: [JobSummary]
    /// Every queue, in creation order.
    public var queues: [QueueSummary]
    /// Live workers, in join order.
    public var workers: [WorkerSummary]
    /// The task stream: the most recent ended attempts in the order they ended, then the running ones by start.
    public var tasks: [TaskBar]
    /// The most recent failed operations, newest last, with their output tails.
    public var failures: [FailureSummary]
    /// Counters and histograms since start.
    public var totals: Totals
}

/// Operation counts by state and outcome, barriers excluded (``OperationCounts`` in JSON form).
public struct StateCounts: Sendable, Codable, Equatable {
    public var pending, ready, dispatched, executing, succeeded, failed, cancelled: Int

    /// Copies `counts`.
    public init(_ counts: OperationCounts) {
        pending = counts.pending
        ready = counts.ready
        dispatched = counts.dispatched
        executing = counts.executing
        succeeded = counts.succeeded
        failed = counts.failed
        cancelled = counts.cancelled
    }

    /// Pairs of (state or outcome name, count), in lifecycle order: the `state` label of the metrics.
    public var named: [(String, Int)] {
        [("pending", pending), ("ready", ready), ("dispatched", dispatched), ("executing", executing),
         ("succeeded", succeeded), ("failed", failed), ("cancelled", cancelled)]
    }

    /// Operations not finished yet.
    public var unfinished: Int { pending + ready + dispatched + executing }
    /// Operations finished, any outcome.
    public var finished: Int { succeeded + failed + cancelled }
}

/// One job: its progress, and an estimate of when it ends.
public struct JobSummary: Sendable, Codable {
    public var id: UInt64
    /// The name of its first operation (jobs have no name of their own).
    public var name: String
    /// Its operations, barriers included.
    public var operations: Int
    public var counts: StateCounts
    public var isFinished: Bool
    /// When this coordinator first saw it (its submission, or the coordinator's start for a recovered job).
    public var firstSeen: Double
    /// When it finished, if it did while this coordinator ran.
    public var finishedAt: Double?
    /// Seconds left at the rate it has finished operations so far; nil until one finished.
    public var etaSeconds: Double?
}

/// A queue's settings and counts.
public struct QueueSummary: Sendable, Codable {
    public var name: String
    /// -1 = no limit, 0 = hold, N = at most N dispatched or executing.
    public var maxConcurrent: Int
    public var isSuspended: Bool
    public var counts: StateCounts
    /// Unfinished barriers.
    public var barriers: Int
    /// Finishes by outcome since start (`succeeded`, `failed`, `cancelled`).
    public var finishedTotal: [String: UInt64]
}

/// A live worker.
public struct WorkerSummary: Sendable, Codable {
    public var id: String
    public var slots: Int
    /// Slots holding an attempt (dispatched or executing).
    public var used: Int
    public var labels: [String: String]
    /// Queues it serves; nil = all.
    public var queues: [String]?
    /// When it was last heard from (any message counts as a heartbeat).
    public var lastSeen: Double
    public var host: String
    public var pid: Int64
    /// Handler names it registered.
    public var handlers: [String]
    /// Operations it holds.
    public var operations: [UInt64]
}

/// One attempt in the task stream: a bar on its worker's slot lane.
public struct TaskBar: Sendable, Codable {
    public var operation: UInt64
    public var name: String
    public var job: UInt64
    public var queue: String
    public var worker: String
    /// Which of the worker's slots it ran on (0-based; the coordinator assigns lanes in start order).
    public var lane: Int
    public var attempt: Int
    /// When it became ready (for this attempt), when it started executing, and when it ended.
    public var readyAt: Double?
    public var start: Double
    public var end: Double?
    /// `running`, `succeeded`, `failed`, `cancelled`, `retry` (failed, will run again) or `lost` (its worker was lost).
    public var outcome: String
    /// Why it ended (FinishReason in words), when it did.
    public var reason: String?
}

/// A failed operation with what it printed.
public struct FailureSummary: Sendable, Codable {
    public var operation: UInt64
    public var name: String
    public var job: UInt64
    public var queue: String
    public var worker: String?
    public var attempt: Int
    public var time: Double
    public var reason: String
    public var exitCode: Int32?
    public var signal: Int32?
    /// The kept tails of its output (at most ``Telemetry/outputTailBytes`` each), as UTF-8 text.
    public var stdoutTail: String
    public var stderrTail: String
    /// The worker's message, for a handler or a spawn failure.
    public var message: String
}

/// A histogram in Prometheus's shape: upper bounds and counts per bucket (not cumulative; the last count
/// is the `+Inf` bucket), the sum and the number of observations.
public struct Histogram: Sendable, Codable, Equatable {
    public var bounds: [Double]
    public var counts: [UInt64]
    public var sum = 0.0
    public var count: UInt64 = 0

    /// An empty histogram over `bounds` (ascending).
    public init(bounds: [Double]) {
        self.bounds = bounds
        counts = Array(repeating: 0, count: bounds.count + 1)
    }

    /// Records one observation. - Complexity: O(buckets), a dozen or so.
    public mutating func observe(_ value: Double) {
        var bucket = 0
        while bucket < bounds.count && value > bounds[bucket] { bucket += 1 }
        counts[bucket] &+= 1
        sum += value
        count &+= 1
    }

    /// Latency buckets from 100 µs to 60 s.
    public static let latencyBounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
}

/// Counters and histograms since the coordinator started.
public struct Totals: Sendable, Codable {
    /// Messages received from workers and clients.
    public var messagesReceived: UInt64 = 0
    /// Messages received per second over the last publishing interval.
    public var messagesPerSecond = 0.0
    /// Failed attempts that will run again.
    public var retries: UInt64 = 0
    /// Attempts sent back to `ready` because their worker was lost.
    public var attemptsLost: UInt64 = 0
    /// Workers declared lost.
    public var workersLost: UInt64 = 0
    /// Jobs accepted (all time, including jobs recovered from the journal).
    public var jobs: UInt64 = 0
    /// Seconds from `ready` to `executing`, per attempt.
    public var dispatchLatency = Histogram(bounds: Histogram.latencyBounds)
    /// Seconds per journal commit (one per loop turn that changed durable state).
    public var journalCommit = Histogram(bounds: Histogram.latencyBounds)
    /// Seconds the coordinator's loop spent on metrics and the dashboard: reading each turn's events and
    /// building and publishing snapshots (what `--http` costs dispatch).
    public var telemetrySeconds = 0.0
    /// Seconds per snapshot built and published.
    public var snapshotBuild = Histogram(bounds: Histogram.latencyBounds)
    /// Events the telemetry could not read because more arrived between two turns than the event log
    /// keeps (0 in practice): counters may be low by this many.
    public var eventsMissed: UInt64 = 0
}
