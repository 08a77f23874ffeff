/// Counts of operations by state and outcome, for a queue or a job. Barriers are not counted (SEMANTICS §6, §8).
public struct OperationCounts: Hashable, Sendable, CustomStringConvertible {
    /// Waiting for dependencies (or a retry's backoff).
    public var pending = 0
    /// Waiting for the queue's turn and a worker slot.
    public var ready = 0
    /// Sent to a worker, not yet started.
    public var dispatched = 0
    /// Running.
    public var executing = 0
    /// Finished successfully.
    public var succeeded = 0
    /// Finished failed.
    public var failed = 0
    /// Finished cancelled.
    public var cancelled = 0

    /// Creates counts.
    public init(pending: Int = 0, ready: Int = 0, dispatched: Int = 0, executing: Int = 0,
                succeeded: Int = 0, failed: Int = 0, cancelled: Int = 0) {
        self.pending = pending
        self.ready = ready
        self.dispatched = dispatched
        self.executing = executing
        self.succeeded = succeeded
        self.failed = failed
        self.cancelled = cancelled
    }

    /// Unfinished operations: Foundation's `operationCount`.
    public var unfinished: Int { pending + ready + dispatched + executing }
    /// Finished operations, any outcome.
    public var finished: Int { succeeded + failed + cancelled }
    /// Everything counted.
    public var total: Int { unfinished + finished }

    public var description: String {
        "pending \(pending), ready \(ready), dispatched \(dispatched), executing \(executing), "
            + "succeeded \(succeeded), failed \(failed), cancelled \(cancelled)"
    }

    /// Moves one operation from the bucket of (`from`, `fromOutcome`) to that of (`to`, `toOutcome`).
    mutating func move(from: OperationState, _ fromOutcome: Outcome?, to: OperationState, _ toOutcome: Outcome?) {
        self[from, fromOutcome] -= 1
        self[to, toOutcome] += 1
    }

    subscript(state: OperationState, outcome: Outcome?) -> Int {
        get {
            switch state {
            case .pending: pending
            case .ready: ready
            case .dispatched: dispatched
            case .executing: executing
            case .finished:
                switch outcome ?? .succeeded {
                case .succeeded: succeeded
                case .failed: failed
                case .cancelled: cancelled
                }
            }
        }
        set {
            switch state {
            case .pending: pending = newValue
            case .ready: ready = newValue
            case .dispatched: dispatched = newValue
            case .executing: executing = newValue
            case .finished:
                switch outcome ?? .succeeded {
                case .succeeded: succeeded = newValue
                case .failed: failed = newValue
                case .cancelled: cancelled = newValue
                }
            }
        }
    }
}
