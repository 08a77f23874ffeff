import OPQCore

/// Every operation's transitions with their time, cause and worker, kept per operation for as long as
/// the operation is (``EventLog`` keeps only the most recent events of all operations together, so an
/// old operation's story would lose its first steps there). `opq show OP --story` and the dashboard's
/// story read it; progress reports are not kept here (they stay in the event log only).
///
/// Memory: each operation's steps are packed into one byte array (``PackedSteps``: a step is a few
/// varints, its numbers taken relative to the operation's first step, ≈ 8–15 bytes where a ``Step`` is
/// 40), trimmed to its size when the operation finishes, stored by operation position (ids are dense),
/// plus one table of worker names: about 100 bytes for an operation that ran once (5 steps), 60–70 for
/// one still pending. A long story (retries without end) keeps its first ``keptFirst`` steps and the
/// latest ones, ``maxSteps`` in all; ``dropped`` counts what went between. An operation's steps are freed
/// when it is pruned (``forget(_:)``).
struct StoryBook {
    /// One transition, unpacked (the fields of an ``OperationEvent`` a story shows); what
    /// ``PackedSteps`` stores in a few bytes.
    struct Step: Equatable {
        /// The event's number in the coordinator's log (the causal order).
        var sequence: UInt64
        /// When it happened (the time of the event that caused it).
        var time: Timestamp
        /// The cause: its id in the high 56 bits, its ``Cause/Kind`` in the low 8.
        var packedCause: UInt64
        /// For a retry: seconds until it is ready again.
        var retryDelay: Float32
        /// The exit status or the signal (``flags`` says which).
        var status: Int32
        /// Index in ``StoryBook/workers`` + 1 (0 = no worker).
        var worker: UInt32
        var attempt: UInt16
        /// ``OperationState`` (3 bits), ``Outcome`` + 1 (2 bits, 0 = none), cancelled (1 bit).
        var state: UInt8
        /// ``FinishReason`` + 1 (7 bits, 0 = none); the high bit: a retry (``retryDelay`` holds its delay).
        var reason: UInt8

        var cause: Cause {
            Cause(id: packedCause >> 8, kind: Cause.Kind(rawValue: UInt8(truncatingIfNeeded: packedCause)) ?? .start)
        }
    }

    /// One operation's steps, packed: each step is its ``Step/state`` byte, a byte with the cause's kind
    /// (high 4 bits) and which optional fields follow, then LEB128 varints — the sequence, the time's bit
    /// pattern and the cause id as differences from the operation's first step (zigzag where they may go
    /// down; the first step's own time as a difference from ``base``), the attempt, then the reason,
    /// status, worker and retry delay when not zero. Deltas from the first step rather than the previous one keep appending and dropping a
    /// step O(first step) and O(bytes) without decoding the whole story; the time's bit pattern keeps it
    /// exact (consecutive Unix times of one era share the exponent, so a millisecond is ≈ 2–3 bytes).
    struct PackedSteps {
        private(set) var bytes: ContiguousArray<UInt8> = []

        private static let hasReason: UInt8 = 1, hasStatus: UInt8 = 2, hasWorker: UInt8 = 4, hasRetryDelay: UInt8 = 8
        /// The cause's kind is the high 4 bits of the flags byte; this value there means a byte of its own follows.
        private static let kindEscape: UInt8 = 15

        var isEmpty: Bool { bytes.isEmpty }

        /// The steps, oldest first (`base`: the book's time origin given to ``append(_:base:)``).
        func steps(base: UInt64) -> [Step] {
            var steps: [Step] = []
            var reader = Reader(bytes: bytes)
            var first: Step?
            while !reader.isAtEnd {
                let step = reader.step(first: first, base: base)
                if first == nil { first = step }
                steps.append(step)
            }
            return steps
        }

        /// The fewest bytes a step takes: its state and flags bytes and four one-byte varints.
        static let minimumStepBytes = 6

        /// Whether the story may hold `steps` steps or more (false: certainly fewer), without reading it.
        func mayHold(_ steps: Int) -> Bool { bytes.count >= steps * Self.minimumStepBytes }

        /// The number of steps.
        var count: Int {
            var reader = Reader(bytes: bytes)
            var count = 0
            var first: Step?
            while !reader.isAtEnd {
                let step = reader.step(first: first, base: 0)
                if first == nil { first = step }
                count += 1
            }
            return count
        }

        /// Appends `step`.
        mutating func append(_ step: Step, base: UInt64) {
            var first: Step?
            if !bytes.isEmpty {
                var reader = Reader(bytes: bytes)
                first = reader.step(first: nil, base: base)
            }
            var flags: UInt8 = 0
            if step.reason != 0 { flags |= Self.hasReason }
            if step.status != 0 { flags |= Self.hasStatus }
            if step.worker != 0 { flags |= Self.hasWorker }
            if step.retryDelay != 0 { flags |= Self.hasRetryDelay }
            let kind = UInt8(truncatingIfNeeded: step.packedCause)
            bytes.append(step.state)
            bytes.append(flags | min(kind, Self.kindEscape) << 4)
            if kind >= Self.kindEscape { bytes.append(kind) }
            if let first {
                varint(step.sequence &- first.sequence)
                signed(Int64(bitPattern: step.time.bitPattern &- first.time.bitPattern))
                signed(Int64(bitPattern: (step.packedCause >> 8) &- (first.packedCause >> 8)))
            } else {
                varint(step.sequence)
                signed(Int64(bitPattern: step.time.bitPattern &- base))
                varint(step.packedCause >> 8)
            }
            varint(UInt64(step.attempt))
            if step.reason != 0 { bytes.append(step.reason) }
            if step.status != 0 { signed(Int64(step.status)) }
            if step.worker != 0 { varint(UInt64(step.worker)) }
            if step.retryDelay != 0 { varint(UInt64(step.retryDelay.bitPattern)) }
        }

        /// Removes step number `position` (≥ 1: the first step is what the others are taken from).
        mutating func remove(at position: Int) {
            precondition(position >= 1, "the first step anchors the others")
            var reader = Reader(bytes: bytes)
            var first: Step?
            var start = 0
            for k in 0...position {
                start = reader.offset
                let step = reader.step(first: first, base: 0)
                if first == nil { first = step }
                if k == position { bytes.removeSubrange(start..<reader.offset) }
            }
        }

        /// Gives back the spare capacity (a finished operation takes no more steps until a retry of its job).
        mutating func trim() {
            guard bytes.capacity > bytes.count else { return }
            let packed = bytes
            bytes = ContiguousArray(unsafeUninitializedCapacity: packed.count) { buffer, count in
                _ = buffer.initialize(from: packed)
                count = packed.count
            }
        }

        private mutating func varint(_ value: UInt64) { LEB128.append(value, to: &bytes) }

        private mutating func signed(_ value: Int64) { LEB128.append(LEB128.zigzag(value), to: &bytes) }

        /// Reads steps from packed bytes (written by this type only, so never malformed).
        private struct Reader {
            let bytes: ContiguousArray<UInt8>
            var offset = 0

            var isAtEnd: Bool { offset >= bytes.count }

            mutating func byte() -> UInt8 {
                defer { offset += 1 }
                return bytes[offset]
            }

            mutating func varint() -> UInt64 {
                var result: UInt64 = 0, shift: UInt64 = 0
                while true {
                    let next = byte()
                    result |= UInt64(next & 0x7F) << shift
                    if next < 0x80 { return result }
                    shift += 7
                }
            }

            mutating func signed() -> UInt64 { UInt64(bitPattern: LEB128.unzigzag(varint())) }

            /// The next step (`first`: the story's first step, nil when this is it).
            mutating func step(first: Step?, base: UInt64) -> Step {
                let state = byte(), flags = byte()
                let kind = flags >> 4 == PackedSteps.kindEscape ? byte() : flags >> 4
                let sequence: UInt64, time: UInt64, causeID: UInt64
                if let first {
                    sequence = first.sequence &+ varint()
                    time = first.time.bitPattern &+ signed()
                    causeID = (first.packedCause >> 8) &+ signed()
                } else {
                    sequence = varint()
                    time = base &+ signed()
                    causeID = varint()
                }
                let cause = causeID << 8 | UInt64(kind)
                let attempt = UInt16(truncatingIfNeeded: varint())
                let reason = flags & PackedSteps.hasReason != 0 ? byte() : 0
                let status = flags & PackedSteps.hasStatus != 0 ? Int32(truncatingIfNeeded: Int64(bitPattern: signed())) : 0
                let worker = flags & PackedSteps.hasWorker != 0 ? UInt32(truncatingIfNeeded: varint()) : 0
                let retryDelay = flags & PackedSteps.hasRetryDelay != 0 ? Float32(bitPattern: UInt32(truncatingIfNeeded: varint())) : 0
                return Step(sequence: sequence, time: Timestamp(bitPattern: time), packedCause: cause, retryDelay: retryDelay,
                            status: status, worker: worker, attempt: attempt, state: state, reason: reason)
            }
        }
    }

    /// Steps kept per operation at most: the first ``keptFirst``, and the latest ones.
    let maxSteps: Int
    /// The first steps of a long story that are always kept.
    let keptFirst: Int
    /// Steps by operation position (id − 1); empty for a pruned operation or one with no event yet.
    private var stories: ContiguousArray<PackedSteps> = []
    /// The bit pattern of the first time recorded: each story's first time is packed as a difference from it.
    private var base: UInt64?
    /// Steps left out after the first ``keptFirst`` of a story longer than ``maxSteps`` (rare: kept apart).
    private var dropped: [OperationID: Int] = [:]
    /// Worker names seen (a step names its worker by index).
    private var workers: [WorkerID] = []
    private var workerIndex: [WorkerID: UInt32] = [:]
    /// The worker a step last named, and its index.
    private var lastWorker: (name: WorkerID, index: UInt32)?

    init(keptFirst: Int = OperationStory.keptFirst, maxSteps: Int = OperationStory.keptFirst + 28) {
        self.keptFirst = max(1, keptFirst)
        self.maxSteps = max(self.keptFirst + 1, maxSteps)
    }

    /// Keeps `change` (event number `sequence`, caused by `cause`) in its operation's story.
    /// - Complexity: amortized O(1); O(``maxSteps``) when a long story drops a step.
    mutating func record(_ change: OperationEvent, sequence: UInt64, cause: Cause) {
        let position = Int(change.operation.rawValue) - 1
        guard position >= 0 else { return }
        if position >= stories.count { stories.append(contentsOf: repeatElement(PackedSteps(), count: position + 1 - stories.count)) }
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
        if base == nil { base = change.time.bitPattern }
        let origin = base ?? 0
        // Counting walks the story: only a story long enough in bytes can have reached `maxSteps`.
        if stories[position].mayHold(maxSteps), stories[position].count == maxSteps {
            stories[position].remove(at: keptFirst)
            dropped[change.operation, default: 0] += 1
        }
        stories[position].append(step, base: origin)
        // A finished operation takes no more steps (until a retry of the whole job): no spare capacity.
        if change.state == .finished { stories[position].trim() }
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
        let steps = stories[position].steps(base: base ?? 0).map { step in
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

    /// The bytes of operation `id`'s packed steps (without the array's header and spare capacity).
    func packedBytes(of id: OperationID) -> Int {
        let position = Int(id.rawValue) - 1
        guard position >= 0, position < stories.count else { return 0 }
        return stories[position].bytes.count
    }

    /// Frees operation `id`'s story (it was pruned).
    mutating func forget(_ id: OperationID) {
        let position = Int(id.rawValue) - 1
        guard position >= 0, position < stories.count else { return }
        stories[position] = PackedSteps()
        dropped[id] = nil
    }

    private mutating func index(of worker: WorkerID) -> UInt32 {
        // Consecutive steps mostly name the same worker: compared before the name is hashed.
        if let last = lastWorker, last.name == worker { return last.index }
        let index: UInt32
        if let known = workerIndex[worker] {
            index = known
        } else {
            workers.append(worker)
            index = UInt32(workers.count)
            workerIndex[worker] = index
        }
        lastWorker = (worker, index)
        return index
    }
}
