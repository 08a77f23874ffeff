import Foundation
import OPQCore
import OPQWire

extension RemoteOperation {
    /// What the client knows of the operation's state, from the event stream and from replies.
    struct Status {
        /// nil until the coordinator accepted the operation.
        var state: OperationState?
        var outcome: Outcome?
        var reason: FinishReason?
        var attempt = 0
        var worker: String?
        var exitCode: Int32?
        var signal: Int32?
        /// Foundation's `isCancelled` flag: set by ``cancel()`` at once, and by a `cancelled` outcome.
        var isCancelled = false
        var progressFraction: Double?
        var progressMessage = ""
        /// The sequence number of the last event applied (0 = none): older ones are ignored.
        var sequence: UInt64 = 0

        /// Order of knowledge for a reply's snapshot, which carries no sequence number: later attempts,
        /// then later states, win; `finished` is final.
        var rank: (Int, Int) { (state == .finished ? Int.max : attempt, Int(state?.rawValue ?? 0)) }
    }

    /// Reads one field of the status.
    func read<Value>(_ field: KeyPath<Status, Value>) -> Value { condition.withLock { status[keyPath: field] } }

    // MARK: Foundation's state properties

    /// The operation's state as the coordinator last reported it; nil before it was added to a queue.
    public var state: OperationState? { read(\.state) }

    /// Whether the operation was cancelled (set at once by ``cancel()``; kept once set). A cancel by
    /// another client shows as soon as its event arrives: for a dispatched or executing operation the
    /// coordinator sends an event of the unchanged state with `isCancelled` set, before the finish.
    public var isCancelled: Bool { read(\.isCancelled) }

    /// Whether every dependency has finished: before the operation is added, judged from its
    /// ``dependencies``; after, the coordinator's word (any state past `pending`).
    public var isReady: Bool {
        let (state, dependencies) = condition.withLock { (status.state, dependencyList) }
        guard let state else { return dependencies.allSatisfy(\.isFinished) }
        return state != .pending
    }

    /// Whether a worker is running it (`dispatched` or `executing`). The worker reports `started` as it
    /// starts the operation and the coordinator forwards it to watchers in the turn it arrives, so this
    /// is true while the operation runs, not only once it finished.
    public var isExecuting: Bool {
        let state = read(\.state)
        return state == .executing || state == .dispatched
    }

    /// Whether it has finished (with any outcome).
    public var isFinished: Bool { read(\.state) == .finished }

    /// How it ended; nil until it has finished.
    public var outcome: Outcome? { read(\.outcome) }

    /// Why it ended the way it did (or why its last attempt ended).
    public var finishReason: FinishReason? { read(\.reason) }

    /// A command's exit status (of its last attempt), when it exited.
    public var exitStatus: Int32? { read(\.exitCode) }

    /// The signal that ended a command, when one did.
    public var terminationSignal: Int32? { read(\.signal) }

    /// The current attempt (0 = never dispatched).
    public var attempt: Int { read(\.attempt) }

    /// The worker holding (or that last held) the current attempt.
    public var worker: String? { read(\.worker) }

    /// The last progress a handler reported: `fraction` in 0…1 (nil = unknown) and its message.
    public var reportedProgress: (fraction: Double?, message: String) {
        condition.withLock { (status.progressFraction, status.progressMessage) }
    }

    // MARK: Applying what the coordinator says (called on the connection's loop thread)

    /// Binds the operation to its id when the coordinator accepted it.
    func bind(_ placement: Placement) {
        condition.withLock {
            self.placement = placement
            if status.state == nil { status.state = .pending }
        }
    }

    /// Applies an event of the stream; returns true when it finished the operation.
    func apply(_ event: RemoteEvent) -> Bool {
        let (finished, streams): (Outcome?, [AsyncStream<RemoteEvent>.Continuation]) = condition.withLock {
            let wasFinished = status.state == .finished
            switch event {
            case .stateChanged(let change):
                guard change.sequence > status.sequence, !wasFinished else { return (nil, []) }
                status.sequence = change.sequence
                if change.isCancelled { status.isCancelled = true }
                status.state = change.state
                status.attempt = change.attempt
                status.worker = change.worker ?? status.worker
                status.reason = change.reason
                if change.state == .finished {
                    status.outcome = change.outcome
                    status.exitCode = change.exitCode
                    status.signal = change.signal
                    if change.outcome == .cancelled { status.isCancelled = true }
                }
            case let .progress(_, fraction, message):
                guard !wasFinished else { return (nil, []) }
                status.progressFraction = fraction
                status.progressMessage = message
            case .jobFinished:
                return (nil, [])
            }
            condition.broadcast()
            let nowFinished = !wasFinished && status.state == .finished
            return (nowFinished ? status.outcome ?? .succeeded : nil, Array(eventStreams.values))
        }
        for stream in streams { stream.yield(event) }
        if let finished { didFinish(outcome: finished) }
        return finished != nil
    }

    /// Applies a snapshot from a reply or a watch snapshot, unless the stream already told more;
    /// returns true when it finished the operation.
    func apply(_ info: Opq_V1_OperationInfo) -> Bool {
        var incoming = Status()
        incoming.state = info.coreState
        incoming.attempt = Int(info.attempt)
        let finished: Outcome? = condition.withLock {
            let wasFinished = status.state == .finished
            guard !wasFinished, incoming.rank >= status.rank else { return nil }
            status.state = incoming.state
            status.attempt = incoming.attempt
            status.worker = info.worker.isEmpty ? nil : info.worker
            status.reason = info.reason.core
            status.outcome = info.outcome.core
            status.isCancelled = status.isCancelled || info.cancelled
            if info.hasExitCode { status.exitCode = info.exitCode }
            if info.hasSignal { status.signal = info.signal }
            if info.hasProgress {
                status.progressFraction = info.progress.hasFraction ? info.progress.fraction : nil
                status.progressMessage = info.progress.message
            }
            condition.broadcast()
            return status.state == .finished ? status.outcome ?? .succeeded : nil
        }
        if let finished { didFinish(outcome: finished) }
        return finished != nil
    }

    /// Sets ``isCancelled`` (the coordinator confirmed a cancel that covered this operation).
    func markCancelled() { condition.withLock { status.isCancelled = true } }
}
