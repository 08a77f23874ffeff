import OPQCore
import OPQWire

/// What ``CoordinatorClient/wait(for:timeout:interruption:)`` waits for.
public enum WaitTarget: Sendable, Hashable {
    /// One operation has finished.
    case operation(OperationID)
    /// Every operation of a job has finished.
    case job(JobID)
    /// The queue has nothing unfinished, including operations added while waiting.
    case queue(String)
}

/// How a wait ended.
public enum WaitOutcome: Sendable, Hashable {
    /// The target has finished.
    case finished
    /// The timeout passed first.
    case timedOut
    /// The ``Interruption`` said to stop.
    case interrupted
}

/// One step of a watch (``CoordinatorClient/nextWatchUpdate(until:interruption:)``).
public enum WatchUpdate: Sendable {
    /// (A part of) the state the watch starts from: the watched unfinished operations — and, for a job,
    /// all of them — plus the jobs already finished. After a gap in the events the client starts the
    /// watch again, and a fresh snapshot comes.
    case snapshot(WatchSnapshot)
    /// Events that followed, in order.
    case events([RemoteEvent])
    /// A piece of a running operation's output (only for a watch started with `includeOutput`).
    case output(OutputPiece)
    /// The deadline passed first.
    case timedOut
    /// The ``Interruption`` said to stop.
    case interrupted
}

/// The state a watch starts from.
public struct WatchSnapshot: Sendable {
    /// The operations it lists.
    public var operations: [OperationStatus]
    /// The jobs it lists that have finished.
    public var finishedJobs: Set<JobID>
    /// False while more parts of the snapshot follow.
    public var isComplete: Bool
}

/// What a watch follows.
public enum WatchScope: Sendable, Hashable {
    /// One job's operations (a finished job gets its snapshot and its `jobFinished` at once).
    case job(JobID)
    /// One queue's operations.
    case queue(String)
    /// Everything.
    case all
}

extension CoordinatorClient {
    /// Blocks until `target` has finished, `timeout` seconds passed (nil = no limit), or `interruption`
    /// says to stop. One request per ``waitSliceSeconds``: the coordinator answers when the target
    /// finishes or the slice ends; a slice's end sends the next request. So a coordinator that restarted
    /// (and forgot the request) is asked again within a slice plus 10 s, and a wait never outlives it.
    public func wait(for target: WaitTarget, timeout: Double?, interruption: Interruption? = nil) throws(ClientError) -> WaitOutcome {
        let end = timeout.map { ContinuousClock.now + .milliseconds(Int($0 * 1000)) }
        while true {
            let left = end.map { (ContinuousClock.now.duration(to: $0)) / .seconds(1) }
            let slice = max(0, min(left ?? waitSliceSeconds, waitSliceSeconds))
            let id = try connection.send(until: ContinuousClock.now + .seconds(10), {
                switch target {
                case .operation(let id): $0.wait.operation = id.rawValue
                case .job(let id): $0.wait.job = id.rawValue
                case .queue(let name): $0.wait.queue = name
                }
                $0.wait.timeoutSeconds = slice
            }, timeout: 10)
            // The coordinator answers at the slice's end; 10 s later without an answer it is gone or
            // restarted: ask again (a new coordinator on the endpoint answers the new request).
            let deadline = ContinuousClock.now + .milliseconds(Int((slice + 10) * 1000))
            answered: while true {
                switch try connection.awaitReply(id, until: deadline, wake: interruption?.fileDescriptor) {
                case .reply(let reply, _):
                    if !reply.waited.timedOut { return .finished }
                    break answered
                case .timedOut:
                    // Nobody answered this slice: past the caller's timeout that is the error to report.
                    if let end, ContinuousClock.now >= end { throw .timeout(endpoint: endpoint, seconds: timeout ?? 0) }
                    break answered
                case .woken:
                    if interruption?.shouldStop() == true { return .interrupted }
                }
            }
            if let end, ContinuousClock.now >= end {
                return .timedOut
            }
        }
    }

    /// Starts watching `scope` (ending the watch started before, if any). Read what follows with
    /// ``nextWatchUpdate(until:interruption:)``: a snapshot, then events — and with `includeOutput`, the
    /// running output of the watched operations as the workers stream it (``WatchUpdate/output(_:)``).
    ///
    /// - Parameter eventDelay: seconds the coordinator may hold events to send several together (at most
    ///   one `events` update per `eventDelay` while events keep coming; the first after a quiet spell and
    ///   a job's finish come at once). 0 = each as soon as it happens. For a client that shows or logs
    ///   events rather than acts on each at once: it makes following a busy job much cheaper for both.
    ///
    /// - Parameter position: where to start instead of a snapshot — a job's ``JobReceipt/streamPosition``,
    ///   for the client that submitted it and knows its operations: the stream then carries what happened
    ///   from the submission on (events already past included) and no snapshot, which for a big job the
    ///   coordinator takes time to make and the client to read. If the coordinator no longer holds events
    ///   that far back, or is another instance, a snapshot comes as without it.
    /// - Returns: whether the watch started at `position` (no snapshot follows).
    @discardableResult
    public func watch(_ scope: WatchScope, includeOutput: Bool = false, eventDelay: Double = 0,
                      after position: JobReceipt.StreamPosition? = nil) throws(ClientError) -> Bool {
        if let old = currentWatch { try connection.request { $0.unwatch.watch = old.id } }
        currentWatch = nil
        lastSequence = nil
        guard let position else {
            return try startWatch(scope, includeOutput: includeOutput, eventDelay: eventDelay, resumeAfter: nil)
        }
        watchInstance = position.instance
        let resumed = try startWatch(scope, includeOutput: includeOutput, eventDelay: eventDelay, resumeAfter: position.sequence)
        if resumed { lastSequence = position.sequence }
        return resumed
    }

    /// Sends the Watch request (resuming after `resumeAfter` on the same coordinator instance, when given)
    /// and makes it the current watch; returns whether the coordinator resumed it.
    @discardableResult
    private func startWatch(_ scope: WatchScope, includeOutput: Bool, eventDelay: Double, resumeAfter: UInt64?) throws(ClientError) -> Bool {
        let (reply, _) = try connection.request {
            switch scope {
            case .job(let job): $0.watch.job = job.rawValue
            case .queue(let name): $0.watch.queue = name
            case .all: $0.watch.all = Opq_V1_All()
            }
            $0.watch.includeOutput = includeOutput
            $0.watch.eventDelaySeconds = eventDelay
            if let resumeAfter, let instance = watchInstance {
                $0.watch.resumeAfter = resumeAfter
                $0.watch.instance = instance
            }
        }
        currentWatch = (reply.requestID, scope, includeOutput, eventDelay)
        watchInstance = reply.watching.instance
        watchHeard = ContinuousClock.now
        return reply.watching.resumed
    }

    /// After ``watchCheckSeconds`` without a message: asks the coordinator for the watch again, resuming
    /// after the last event seen, and ends the old one. The same coordinator resumes it (nothing is
    /// repeated); one that restarted (another instance) sends a fresh snapshot. No answer within 10 s
    /// throws ``ClientError/timeout(endpoint:seconds:)``.
    private func checkWatch() throws(ClientError) {
        guard let old = currentWatch else { return }
        let resumed = try startWatch(old.scope, includeOutput: old.includeOutput, eventDelay: old.eventDelay, resumeAfter: lastSequence)
        if !resumed { lastSequence = nil }  // a snapshot follows
        _ = try? connection.request { $0.unwatch.watch = old.id }  // (a restarted coordinator never had it)
    }

    /// The next step of the watch started by ``watch(_:)``: blocks until the coordinator sends
    /// something for it, `deadline` passes (nil = no limit) or `interruption` says to stop. A gap in the
    /// events (something lost) starts the watch again; a fresh snapshot follows. After
    /// ``watchCheckSeconds`` of silence the watch is asked for again (so a coordinator that restarted
    /// and forgot it sends a fresh snapshot); a coordinator that does not answer that within 10 s is a
    /// ``ClientError/timeout(endpoint:seconds:)``. Called before ``watch(_:)``, it throws
    /// ``ClientError/notWatching``.
    public func nextWatchUpdate(until deadline: ContinuousClock.Instant?, interruption: Interruption? = nil) throws(ClientError) -> WatchUpdate {
        while true {
            guard let watch = currentWatch else { throw .notWatching }
            let check = watchHeard + .milliseconds(Int(watchCheckSeconds * 1000))
            switch try connection.nextStreamMessage(until: deadline.map { min($0, check) } ?? check, wake: interruption?.fileDescriptor) {
            case .timedOut:
                if let deadline, ContinuousClock.now >= deadline { return .timedOut }
                if ContinuousClock.now >= check { try checkWatch() }
            case .woken:
                if interruption?.shouldStop() == true { return .interrupted }
            case .message(let message, let raw):
                watchHeard = ContinuousClock.now
                switch message.body {
                case .snapshot(let snapshot) where snapshot.watch == watch.id:
                    lastSequence = snapshot.sequence
                    return .snapshot(WatchSnapshot(
                        operations: snapshot.operations.map { OperationStatus($0, raw: raw) },
                        finishedJobs: Set(snapshot.jobs.filter(\.finished).map(\.jobID)),
                        isComplete: !snapshot.more))
                case .events(let events) where events.watch == watch.id:
                    if let last = lastSequence, events.previous != last {
                        try self.watch(watch.scope, includeOutput: watch.includeOutput, eventDelay: watch.eventDelay)  // a gap: start again from a fresh snapshot
                        continue
                    }
                    lastSequence = events.items.last?.sequence ?? lastSequence
                    return .events(events.items.compactMap(RemoteEvent.init))
                case .output(let push) where push.watch == watch.id:
                    return .output(OutputPiece(operation: OperationID(push.operation), attempt: Int(push.attempt),
                                               stream: push.stream == .stderr ? .standardError : .standardOutput,
                                               offset: push.offset, bytes: push.bytes(in: raw)))
                default:
                    continue
                }
            }
        }
    }
}
