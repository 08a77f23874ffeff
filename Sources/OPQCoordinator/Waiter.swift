import OPQCore
import OPQWire

/// A client waiting for an operation, a job or a queue to finish (SEMANTICS §8).
struct Waiter {
    enum Target {
        case operation(OperationID)
        case job(JobID)
        /// "Wait until all operations are finished": nothing unfinished, including what is added meanwhile.
        case queue(String)
    }

    let identity: [UInt8]
    let requestID: UInt64
    let target: Target
    /// When to give up (reply `timed_out`), if ever.
    let deadline: Double?
}

extension CoordinatorState {
    /// Whether `target` has finished.
    func isSatisfied(_ target: Waiter.Target) -> Bool {
        switch target {
        case .operation(let id): core.state(of: id) == .finished
        case .job(let id): core.isFinished(job: id) ?? true
        case .queue(let name): core.isIdle(queue: name)
        }
    }

    /// The reply to a wait: the target's state now.
    func waitReply(_ waiter: Waiter, timedOut: Bool) -> Opq_V1_CoordinatorToClient {
        .reply(waiter.requestID) { reply in
            reply.waited.timedOut = timedOut
            switch waiter.target {
            case .operation(let id): reply.waited.operation = operationInfo(id, includeOutput: false).info
            case .job(let id): if let job = core.job(id) { reply.waited.job = Opq_V1_JobInfo(job) }
            case .queue(let name): reply.waited.queue = queueInfo(name)
            }
        }
    }

    /// Takes every waiter whose target has finished; returns their answers (framed).
    mutating func satisfiedWaits() -> [[[UInt8]]] {
        guard !waiters.isEmpty else { return [] }
        var still: [Waiter] = []
        var answers: [[[UInt8]]] = []
        for waiter in waiters {
            if isSatisfied(waiter.target) {
                if let frames = frame(waitReply(waiter, timedOut: false), identity: waiter.identity) { answers.append(frames) }
            } else {
                still.append(waiter)
            }
        }
        waiters = still
        return answers
    }

    /// Answers every waiter whose timeout has passed.
    mutating func expireWaiters(now: Double) {
        guard waiters.contains(where: { ($0.deadline ?? .infinity) <= now }) else { return }
        var still: [Waiter] = []
        for waiter in waiters {
            if let deadline = waiter.deadline, deadline <= now {
                queueToClient(waitReply(waiter, timedOut: true), identity: waiter.identity)
            } else {
                still.append(waiter)
            }
        }
        waiters = still
    }

    /// The queue's info, also for a queue never used (empty, default settings).
    func queueInfo(_ name: String) -> Opq_V1_QueueInfo {
        if let queue = core.queue(name) { return Opq_V1_QueueInfo(queue) }
        var info = Opq_V1_QueueInfo()
        info.name = name
        info.maxConcurrent = -1
        return info
    }

    /// An operation's info with its last finish report, and (optionally) its output tails as raw frames.
    func operationInfo(_ id: OperationID, includeOutput: Bool) -> (info: Opq_V1_OperationInfo, raw: [[UInt8]]) {
        guard let snapshot = core.operation(id) else { return (Opq_V1_OperationInfo(), []) }
        var info = Opq_V1_OperationInfo(snapshot)
        var raw: [[UInt8]] = []
        if let record = outputs[id] {
            if let code = record.exitCode { info.exitCode = code }
            if let signal = record.signal { info.signal = signal }
            info.durationSeconds = record.duration
            info.finishedBy = record.worker
            if let ended = record.endedAt {
                info.endedAt = ended
                info.startedAt = ended - record.duration
            }
            if includeOutput {
                info.stdout = Opq_V1_OutputTail.attach(record.stdout, total: Int(record.stdoutTotal), to: &raw)
                info.stderr = Opq_V1_OutputTail.attach(record.stderr, total: Int(record.stderrTotal), to: &raw)
            }
        }
        return (info, raw)
    }
}
