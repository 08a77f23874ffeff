import DequeModule
import OPQCore
import OPQWire

/// One numbered event, kept in the core's own (cheap) form; it becomes a wire message only when a
/// watcher is sent it.
struct LoggedEvent {
    enum Kind {
        case operation(OperationEvent)
        case jobFinished(JobID)
        case progress(Opq_V1_Progress)
    }

    let sequence: UInt64
    let kind: Kind
    /// The message or timer it followed from.
    var cause = Cause.start

    /// The event as the protocol carries it.
    var wire: Opq_V1_Event {
        var event = Opq_V1_Event()
        event.sequence = sequence
        switch kind {
        case .operation(let change): event.operation = Opq_V1_OperationEvent(change)
        case .jobFinished(let job): event.jobFinished = job.rawValue
        case .progress(let progress): event.progress = progress
        }
        return event
    }

    /// The event as the protocol carries it, a finish that a worker's report ended with its output
    /// sizes from that report (`outputs`), so a client printing output fetches none when there is none.
    /// Only a finish by the report of the attempt that ran last says so for sure (reasons a report gives:
    /// completed, exit status, signal, error): after a lost worker, a timeout or a cancel the kept report
    /// may be an earlier attempt's, and the sizes stay absent (not known).
    func wire(outputs: OutputStore) -> Opq_V1_Event {
        var event = wire
        guard case .operation(let change) = kind, change.state == .finished else { return event }
        switch change.reason {
        case .completed?, .exitStatus?, .signal?, .error?:
            if let report = outputs[change.operation] {
                event.operation.stdoutBytes = report.stdoutTotal
                event.operation.stderrBytes = report.stderrTotal
            }
        default:
            break
        }
        return event
    }

    /// Approximate bytes this event keeps alive in the log: its inline size plus the progress text it
    /// alone holds (worker names are shared strings, counted once by their sessions).
    var cost: Int {
        var bytes = MemoryLayout<LoggedEvent>.stride
        if case .progress(let progress) = kind { bytes += 64 + progress.message.utf8.count }
        return bytes
    }
}

/// The coordinator's numbered event history (Clone pattern): every event gets the next global sequence
/// number; the most recent ones are kept so a watcher that saw a gap can resume without a snapshot.
/// What is kept is bounded both by count and by bytes (``LoggedEvent/cost``); the oldest go first, and a
/// watcher resuming from before them gets a fresh snapshot instead. Each operation's transitions are
/// also kept in its own story (``stories``) for as long as the operation is, whatever the log dropped.
struct EventLog {
    /// Sequence of the last event appended (0 = none yet).
    private(set) var lastSequence: UInt64 = 0
    /// Recent events, oldest first.
    private var recent = Deque<LoggedEvent>()
    /// How many events are kept.
    let capacity: Int
    /// How many bytes of events are kept (approximately, by ``LoggedEvent/cost``).
    let byteBudget: Int
    /// The cost of the kept events.
    private(set) var bytes = 0
    /// Every operation's transitions (``StoryBook``), kept until the operation is pruned.
    private(set) var stories = StoryBook()

    init(capacity: Int, byteBudget: Int = 64 << 20) {
        self.capacity = max(1, capacity)
        self.byteBudget = max(1, byteBudget)
    }

    /// Events kept now.
    var count: Int { recent.count }

    /// Numbers and keeps an event, caused by `cause`; returns it.
    mutating func append(_ kind: LoggedEvent.Kind, cause: Cause = .start) -> LoggedEvent {
        lastSequence += 1
        let event = LoggedEvent(sequence: lastSequence, kind: kind, cause: cause)
        if case .operation(let change) = kind { stories.record(change, sequence: lastSequence, cause: cause) }
        recent.append(event)
        bytes += event.cost
        // The newest event always stays, so `lastSequence` is always covered.
        while recent.count > 1, recent.count > capacity || bytes > byteBudget {
            bytes -= recent.removeFirst().cost
        }
        return event
    }

    /// The kept events after `sequence`, in place (a slice of the log, not a copy), or nil when some of
    /// them are no longer kept.
    func events(after sequence: UInt64) -> Deque<LoggedEvent>.SubSequence? {
        guard sequence <= lastSequence else { return nil }
        if sequence == lastSequence { return recent[recent.endIndex...] }
        guard let first = recent.first, first.sequence <= sequence + 1 else { return nil }
        let start = Int(sequence + 1 - first.sequence)
        return recent[start...]
    }

    /// Frees operation `id`'s story (it was pruned).
    mutating func forgetStory(of id: OperationID) {
        stories.forget(id)
    }

    /// The kept events of operation `id` (its transitions and progress), oldest first, and whether the
    /// log still holds every event since the first (so nothing of it was dropped).
    /// - Complexity: O(events kept).
    func history(of id: OperationID) -> (events: [LoggedEvent], isWhole: Bool) {
        let mine: [LoggedEvent] = recent.filter { event in
            switch event.kind {
            case .operation(let change): change.operation == id
            case .progress(let progress): progress.operation == id.rawValue
            case .jobFinished: false
            }
        }
        return (mine, recent.first.map { $0.sequence == 1 } ?? true)
    }
}

/// One client's event stream.
struct Watcher {
    /// What the stream covers.
    enum Scope: Hashable {
        case job(JobID)
        case queue(String)
        case all
    }

    /// The client's routing identity.
    let identity: [UInt8]
    /// The Watch request's id, naming the stream.
    let watch: UInt64
    let scope: Scope
    /// Sequence of the last thing sent on the stream.
    var previous: UInt64
    /// Events to send at the end of this turn.
    var pending: [LoggedEvent] = []
    /// Whether the client asked for the running output of the operations it watches (``OutputPush``).
    var includesOutput = false
    /// How long events may wait to go out together (`Watch.event_delay_seconds`, at most ``maxEventDelay``;
    /// 0 = each turn's at once): an Events message goes no sooner than this after the one before.
    var eventDelay = 0.0
    /// When the last Events message went out (the loop's clock; nil = none yet).
    var lastSent: Double?
    /// A JobFinished waits in ``pending``: it goes at once, with everything before it.
    var pendingJobFinished = false

    /// The longest a client may ask its events to be held (`Watch.event_delay_seconds`).
    static let maxEventDelay = 1.0

    /// When ``pending`` may go out: at once (`now` or before) unless an Events message went out less than
    /// ``eventDelay`` ago and no JobFinished waits.
    var sendDue: Double {
        guard eventDelay > 0, !pendingJobFinished, let lastSent else { return -.infinity }
        return lastSent + eventDelay
    }

    struct Key: Hashable {
        let identity: [UInt8]
        let watch: UInt64
    }

    var key: Key { Key(identity: identity, watch: watch) }

    /// Whether an event of operation `job`/`queue` (or of a whole job) belongs on this stream.
    func covers(job: JobID, queue: () -> String?) -> Bool {
        switch scope {
        case .all: true
        case .job(let watched): watched == job
        case .queue(let name): queue() == name
        }
    }
}
