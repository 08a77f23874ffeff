import OPQCore

/// One seeded random workload: the same events fed to the core and to the reference model, with the
/// core's invariants, its public queries and its effects checked after every event.
struct WorkloadRun {
    let seed: UInt64
    var core: Scheduler
    var model: ReferenceModel
    var generator: WorkloadGenerator
    var now: Double = 0
    var step = 0
    /// The last events, for the failure message.
    var recent: [WorkloadEvent] = []
    var traceAll = false
    var maxEvents = 0

    // Shadow state rebuilt from the effects alone.
    var holder: [Int: WorkerID] = [:]
    var lastNotified: [Int: OperationState] = [:]
    var finishedJobs: Set<Int> = []
    /// Operations seen finished and equal in both; they can no longer change, so they are checked only in full sweeps.
    var verifiedFinished: [Bool] = []
    /// Every durable record the core emitted so far, in order (what the journal would hold).
    var records: [JournalRecord] = []

    init(seed: UInt64) {
        self.seed = seed
        var configuration = Scheduler.Configuration()
        configuration.maxRetryBackoff = 4
        core = Scheduler(configuration: configuration)
        model = ReferenceModel(configuration: configuration)
        generator = WorkloadGenerator(seed: seed)
    }

    /// Runs `steps` events (random count if nil); returns a failure report, or nil.
    mutating func run(steps: Int? = nil, lengths: ClosedRange<Int> = 100...140) -> String? {
        maxEvents = lengths.upperBound
        let count = steps ?? generator.rng.int(lengths)
        for _ in 0..<count {
            step += 1
            let event = generator.next(model)
            recent.append(event)
            if recent.count > 16 { recent.removeFirst() }
            if traceAll { print("[\(step)] \(event)") }
            if let problem = apply(event) ?? check(full: step % 25 == 0 || step == count)
                ?? (replayIsDue || step == count ? replayAgrees() : nil) {
                return report(problem)
            }
        }
        return nil
    }

    func report(_ problem: String) -> String {
        let trace = recent.enumerated().map { "  [\(step - recent.count + $0.offset + 1)] \($0.element)" }
        return "seed \(seed), step \(step): \(problem)\nlast events:\n" + trace.joined(separator: "\n")
            + "\nreproduce: OPQ_SEED=\(seed) OPQ_MAX_EVENTS=\(maxEvents) OPQ_TRACE=1 swift test --filter RandomWorkload"
    }

    /// Feeds one event to both; returns a disagreement about the event's direct answer, if any.
    mutating func apply(_ event: WorkloadEvent) -> String? {
        model.kills = []
        model.now = now
        func differ<T: Equatable>(_ what: String, _ core: T, _ model: T) -> String? {
            core == model ? nil : "\(what): core answered \(core), model \(model)"
        }
        func op(_ id: Int) -> OperationID { OperationID(UInt64(id)) }
        var answer: String?
        var refused = false  // the core refused the request: it must change nothing and emit nothing
        switch event {
        case .submit(let submission):
            var ids: [Int]?
            do { ids = try core.submit(submission, at: now).operations.map { Int($0.rawValue) } } catch { if traceAll { print("  refused: \(error)") } }
            refused = ids == nil
            answer = differ("submit", ids, model.submit(submission))
        case .cancel(let id):
            let known = (try? core.cancel(op(id), at: now)) != nil
            refused = !known
            answer = differ("cancel", known, model.cancel(id))
        case .cancelJob(let job):
            let known = (try? core.cancel(job: JobID(UInt64(job)), at: now)) != nil
            refused = !known
            if job <= model.jobs.count { model.cancel(ids: model.jobs[job - 1]) }
            answer = differ("cancel job", known, job <= model.jobs.count)
        case .cancelQueue(let name):
            let known = (try? core.cancelAll(inQueue: name, at: now)) != nil
            refused = !known
            if model.queue(name) != nil { model.cancel(ids: model.ops.filter { $0.queue == name }.map(\.id)) }
            answer = differ("cancelAll", known, model.queue(name) != nil)
        case let .suspend(name, suspended):
            core.setSuspended(suspended, queue: name, at: now)
            _ = model.configure(name, suspended: suspended)
        case let .setMax(name, max):
            let accepted = (try? core.setMaxConcurrent(max, queue: name, at: now)) != nil
            refused = !accepted
            answer = differ("setMax", accepted, model.configure(name, maxConcurrent: max))
        case let .setPriority(id, priority):
            answer = differ("setPriority", (try? core.setPriority(priority, of: op(id), at: now)) != nil,
                            model.setPriority(priority, of: id))
        case let .addDependency(id, target):
            let result = WorkloadRun.edit { () throws(RequestError) in try core.addDependency(op(id), on: op(target), at: now) }
            refused = result == .cycle || result == .unknown
            answer = differ("addDependency", result, model.addDependency(id, on: target))
        case let .removeDependency(id, target):
            let result = WorkloadRun.edit { () throws(RequestError) in try core.removeDependency(op(id), on: op(target), at: now) }
            refused = result == .unknown
            answer = differ("removeDependency", result, model.removeDependency(id, on: target))
        case .reserve(let count):
            let numbers = (try? core.reserve(count, at: now))?.map { Int($0.rawValue - OperationID.reservationBase) }
            refused = numbers == nil
            answer = differ("reserve", numbers, model.reserve(count))
        case .cancelReservation(let number):
            let known = (try? core.cancel(.reservation(UInt64(number)), at: now)) != nil
            refused = !known
            answer = differ("cancel reservation", known, model.cancelReservation(number))
        case let .addForwardDependency(id, number):
            let result = WorkloadRun.edit { () throws(RequestError) in try core.addDependency(op(id), on: .reservation(UInt64(number)), at: now) }
            refused = result == .unknown
            answer = differ("addDependency on a reservation", result, model.addForwardDependency(id, on: number))
        case let .removeForwardDependency(id, number):
            let result = WorkloadRun.edit { () throws(RequestError) in try core.removeDependency(op(id), on: .reservation(UInt64(number)), at: now) }
            refused = result == .unknown
            answer = differ("removeDependency on a reservation", result, model.removeForwardDependency(id, on: number))
        case let .join(worker, slots, queues, labels, holding):
            core.workerJoined(worker, slots: slots, queues: queues, labels: labels, holding: holding, at: now)
            model.workerJoined(worker, slots: slots, queues: queues, labels: labels, holding: holding)
        case .leave(let worker):
            core.workerLeft(worker, at: now)
            model.workerGone(worker, lost: false)
        case .lose(let worker):
            core.workerLost(worker, at: now)
            model.workerGone(worker, lost: true)
        case .heartbeat(let worker):
            core.heartbeat(from: worker, at: now)
            model.heartbeat(worker)
        case let .started(id, attempt, worker):
            answer = differ("started", core.started(op(id), attempt: attempt, worker: worker, at: now),
                            model.started(id, attempt: attempt, worker: worker))
        case let .finished(id, attempt, worker, report):
            answer = differ("finished", core.finished(op(id), attempt: attempt, worker: worker, report, at: now),
                            model.finished(id, attempt: attempt, worker: worker, report))
        case let .tick(time, beats):
            now = time
            model.now = time
            for worker in beats {
                core.heartbeat(from: worker, at: time)
                model.heartbeat(worker)
            }
            core.tick(at: time)
            model.tick(to: time)
        }
        if let answer { return answer }
        do { try core.checkInvariants() } catch { return "invariant broken: \(error)" }
        let effects = core.takeEffects()
        if refused, !effects.isEmpty { return "refused \(event) but it had effects: \(effects)" }
        return checkEffects(effects)
    }

    static func edit(_ body: () throws(RequestError) -> Bool) -> ReferenceModel.EditResult {
        do {
            return try body() ? .done : .ignored
        } catch {
            if case .cycle = error { return .cycle }
            return .unknown
        }
    }

    static let allowed: [OperationState?: Set<OperationState>] = [
        nil: [.pending, .ready],
        .pending: [.ready, .finished],
        .ready: [.dispatched, .finished, .pending, .executing],
        .dispatched: [.executing, .finished, .ready, .pending],
        .executing: [.finished, .ready, .pending],
        .finished: [],
    ]

    /// Checks the event's effects: dispatches only into free slots and under the queue's maximum, events
    /// of each operation in lifecycle order, each operation finished once, each job finished once.
    mutating func checkEffects(_ effects: [Effect]) -> String? {
        var kills: [String] = []
        for effect in effects {
            switch effect {
            case let .dispatch(id, attempt, worker, _):
                let op = Int(id.rawValue)
                guard let w = model.liveWorker(worker) else { return "dispatch of \(id) to \(worker), which is not live" }
                // (An attempt fenced on a lost worker of the same name takes none of this worker's slots.)
                let taken = holder.filter { $0.value == worker && model.op($0.key).fencedUntil == nil }.count
                if taken >= model.workers[w].slots { return "dispatch of \(id) to \(worker) with no free slot (\(taken) held)" }
                let queue = model.queue(model.op(op).queue)!
                let active = holder.keys.filter { model.op($0).queue == queue.name }.count
                if !queue.isRunning || (queue.maxConcurrent >= 0 && active >= queue.maxConcurrent) {
                    return "dispatch of \(id) beyond queue '\(queue.name)' (active \(active), max \(queue.maxConcurrent), suspended \(queue.isSuspended))"
                }
                if holder[op] != nil { return "dispatch of \(id), already held by \(holder[op]!)" }
                holder[op] = worker
                if attempt != model.op(op).attempt { return "dispatch of \(id) as attempt \(attempt), model says \(model.op(op).attempt)" }
            case .notify(let event):
                let op = Int(event.operation.rawValue)
                let previous = lastNotified[op]
                // A cancel of a dispatched or executing operation repeats its state with isCancelled set.
                if event.isCancelled, event.state == previous, event.state == .dispatched || event.state == .executing {
                    if !model.op(op).isCancelled { return "\(event.operation): cancel notified, the model has not cancelled it" }
                    continue
                }
                if !WorkloadRun.allowed[previous]!.contains(event.state) {
                    return "\(event.operation): event \(event.state) after \(previous.map(\.description) ?? "nothing")"
                }
                lastNotified[op] = event.state
                switch event.state {
                case .dispatched:
                    if holder[op] == nil || event.worker != holder[op] { return "\(event.operation): dispatched event without its dispatch" }
                case .executing:
                    if previous == .ready { holder[op] = event.worker }
                    if holder[op] == nil || event.worker != holder[op] { return "\(event.operation): executing on \(event.worker.map(\.name) ?? "nil"), held by \(holder[op].map(\.name) ?? "nobody")" }
                case .finished:
                    if event.outcome == nil { return "\(event.operation): finished without an outcome" }
                    holder[op] = nil
                case .pending, .ready:
                    holder[op] = nil
                }
            case .kill(let id, let attempt, let worker, let reason):
                kills.append("kill \(id.rawValue)#\(attempt)@\(worker) \(reason)")
            case .jobFinished(let job):
                if !finishedJobs.insert(Int(job.rawValue)).inserted { return "\(job) finished twice" }
            case .journal(let record):
                records.append(record)
            }
        }
        if kills.sorted() != model.kills.sorted() { return "kills: core \(kills), model \(model.kills)" }
        return nil
    }
}
