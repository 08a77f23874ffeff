import OPQCore

/// Every operation's transitions with their time, cause and worker, kept per operation for as long as
/// the operation is (``EventLog`` keeps only the most recent events of all operations together, so an
/// old operation's story would lose its first steps there). `opq show OP --story` and the dashboard's
/// story read it; progress reports are not kept here (they stay in the event log only).
///
/// Memory: one ``Step`` (40 bytes) per transition — five for an operation that ran once — in one array
/// per operation (trimmed to its size when the operation finishes), stored by operation position (ids
/// are dense), plus one table of worker names: about 250 bytes for an operation that ran once. A long
/// story (retries without end) keeps its first ``keptFirst`` steps and the latest ones, ``maxSteps`` in
/// all; ``dropped`` counts what went between. An operation's steps are freed when it is pruned
/// (``forget(_:)``).
struct StoryBook {
    /// One transition, packed (the fields of an ``OperationEvent`` a story shows).
    struct Step {
        /// The event's number in the coordinator's log (the causal order).
        let sequence: UInt64
        /// When it happened (the time of the event that caused it).
        let time: Timestamp
        /// The cause: its id in the high 56 bits, its ``Cause/Kind`` in the low 8.
        let packedCause: UInt64
        /// For a retry: seconds until it is ready again.
        let retryDelay: Float32
        /// The exit status or the signal (``flags`` says which).
        let status: Int32
        /// Index in ``StoryBook/workers`` + 1 (0 = no worker).
        let worker: UInt32
        let attempt: UInt16
        /// ``OperationState`` (3 bits), ``Outcome`` + 1 (2 bits, 0 = none), cancelled (1 bit).
        let state: UInt8
        /// ``FinishReason`` + 1 (7 bits, 0 = none); the high bit: a retry (``retryDelay`` holds its delay).
        let reason: UInt8

        var cause: Cause {
            Cause(id: packedCause >> 8, kind: Cause.Kind(rawValue: UInt8(truncatingIfNeeded: packedCause)) ?? .start)
        }
    }


    /// Steps kept per operation at most: the first ``keptFirst``, and the latest ones.
    let maxSteps: Int
    /// The first steps of a long story that are always kept.
    let keptFirst: Int
    /// Steps by operation position (id − 1); empty for a pruned operation or one with no event yet.
    private var stories: ContiguousArray<ContiguousArray<Step>> = []
    /// Steps left out after the first ``keptFirst`` of a story longer than ``maxSteps`` (rare: kept apart).
    private var dropped: [OperationID: Int] = [:]
    /// Worker names seen (a step names its worker by index).
    private var workers: [WorkerID] = []
    private var workerIndex: [WorkerID: UInt32] = [:]

    init(keptFirst: Int = OperationStory.keptFirst, maxSteps: Int = OperationStory.keptFirst + 28) {
        self.keptFirst = max(1, keptFirst)
        self.maxSteps = max(self.keptFirst + 1, maxSteps)
    }

    /// Keeps `change` (event number `sequence`, caused by `cause`) in its operation's story.
    /// - Complexity: amortized O(1); O(``maxSteps``) when a long story drops a step.
    mutating func record(_ change: OperationEvent, sequence: UInt64, cause: Cause) {
        let position = Int(change.operation.rawValue) - 1
        guard position >= 0 else { return }
        if position >= stories.count { stories.append(contentsOf: repeatElement([], count: position + 1 - stories.count)) }
        var worker: UInt32 = 0
        if let name = change.worker { worker = index(of: name) }
        let step = Step(
            sequence: sequence, time: change.time, packedCause: cause.id << 8 | UInt64(cause.kind.rawValue),
            retryDelay: Float32(max(0, (change.retryAt ?? change.time) - change.time)),
            status: change.exitCode ?? change.signal ?? 0, worker: worker,
            attempt: UInt16(clamping: change.attempt),
            state: change.state.rawValue | UInt8(change.outcome.map { $0.rawValue + 1 } ?? 0) << 3
                | (change.isCancelled ? 0x20 : 0) | (change.exitCode != nil ? 0x40 : 0) | (change.signal != nil ? 0x80 : 0),
            reason: (change.reason.map { $0.rawValue + 1 } ?? 0) | (change.retryAt != nil ? 0x80 : 0))
        if stories[position].isEmpty { stories[position].reserveCapacity(6) }
        if stories[position].count == maxSteps {
            stories[position].remove(at: keptFirst)
            dropped[change.operation, default: 0] += 1
        }
        stories[position].append(step)
        // A finished operation takes no more steps (until a retry of the whole job): no spare capacity.
        if change.state == .finished, stories[position].capacity > stories[position].count {
            let steps = stories[position]
            stories[position] = ContiguousArray(unsafeUninitializedCapacity: steps.count) { buffer, count in
                _ = buffer.initialize(from: steps)
                count = steps.count
            }
        }
    }

    /// One step as a story shows it (a ``Step`` unpacked).
    struct Transition {
        var sequence: UInt64
        var cause: Cause
        var state: OperationState
        var attempt: Int
        var worker: WorkerID?
        var outcome: Outcome?
        var reason: FinishReason?
        var exitCode: Int32?
        var signal: Int32?
        var retryAt: Timestamp?
        var time: Timestamp
        var isCancelled: Bool
    }

    /// Operation `id`'s story: its steps, oldest first, and how many were left out after the first
    /// ``keptFirst``; nil
    /// when none is kept.
    func story(of id: OperationID) -> (steps: [Transition], dropped: Int)? {
        let position = Int(id.rawValue) - 1
        guard position >= 0, position < stories.count, !stories[position].isEmpty else { return nil }
        let steps = stories[position].map { step in
            let outcome = Int(step.state >> 3 & 0x3)
            let hasExit = step.state & 0x40 != 0, hasSignal = step.state & 0x80 != 0
            let reason = step.reason & 0x7F
            return Transition(
                sequence: step.sequence, cause: step.cause, state: OperationState(rawValue: step.state & 0x7) ?? .pending,
                attempt: Int(step.attempt), worker: step.worker == 0 ? nil : workers[Int(step.worker) - 1],
                outcome: outcome == 0 ? nil : Outcome(rawValue: UInt8(outcome - 1)),
                reason: reason == 0 ? nil : FinishReason(rawValue: reason - 1),
                exitCode: hasExit ? step.status : nil, signal: hasSignal && !hasExit ? step.status : nil,
                retryAt: step.reason & 0x80 != 0 ? step.time + Double(step.retryDelay) : nil, time: step.time,
                isCancelled: step.state & 0x20 != 0)
        }
        return (steps, dropped[id] ?? 0)
    }

    /// Frees operation `id`'s story (it was pruned).
    mutating func forget(_ id: OperationID) {
        let position = Int(id.rawValue) - 1
        guard position >= 0, position < stories.count else { return }
        stories[position] = []
        dropped[id] = nil
    }

    private mutating func index(of worker: WorkerID) -> UInt32 {
        if let known = workerIndex[worker] { return known }
        workers.append(worker)
        let index = UInt32(workers.count)
        workerIndex[worker] = index
        return index
    }
}
