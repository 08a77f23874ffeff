import OPQCore
import OPQWire

extension CoordinatorState {
    /// Page size when a listing names none.
    static let defaultPage = 1_000

    func listJobs(_ list: Opq_V1_ListJobs) -> Opq_V1_JobList {
        var result = Opq_V1_JobList()
        let limit = list.limit == 0 ? CoordinatorState.defaultPage : Int(list.limit)
        // `after` is any UInt64 from outside: the cursor never goes past the last job, so it cannot overflow.
        guard list.after < UInt64(core.jobCount) else { return result }
        var next = list.after + 1
        while next <= UInt64(core.jobCount) {
            guard let job = core.job(JobID(next)) else {
                next += 1
                continue  // pruned
            }
            next += 1
            if list.unfinishedOnly && job.isFinished { continue }
            if result.jobs.count == limit {
                result.more = true
                break
            }
            result.jobs.append(Opq_V1_JobInfo(job))
        }
        return result
    }

    func listOperations(_ list: Opq_V1_ListOperations) -> Opq_V1_OperationList {
        var result = Opq_V1_OperationList()
        let limit = list.limit == 0 ? CoordinatorState.defaultPage : Int(list.limit)
        let states = Set(list.states.compactMap(OperationState.init))
        let candidates: [OperationID]
        if list.job != 0 {
            candidates = core.job(JobID(list.job))?.operations ?? []
        } else if !list.queue.isEmpty, states.isSubset(of: [.pending, .ready, .dispatched, .executing]), !states.isEmpty {
            candidates = core.operations(inQueue: list.queue)  // unfinished only: no need to scan history
        } else {
            let total = UInt64(core.operationTotal)
            candidates = (min(list.after, total)..<total).map { OperationID($0 + 1) }
        }
        for id in candidates where id.rawValue > list.after {
            guard let snapshot = core.operation(id) else { continue }
            if !list.queue.isEmpty && snapshot.queue != list.queue { continue }
            if !states.isEmpty && !states.contains(snapshot.state) { continue }
            if result.operations.count == limit {
                result.more = true
                break
            }
            result.operations.append(operationInfo(id, includeOutput: false).info)
        }
        return result
    }

    func workerInfos() -> [Opq_V1_WorkerInfo] {
        core.workerSnapshots.map { snapshot in
            var info = Opq_V1_WorkerInfo(snapshot)
            if let registration = sessions[snapshot.id]?.registration {
                info.handlers = registration.handlers
                info.host = registration.host
                info.pid = registration.pid
            }
            return info
        }
    }

    /// Starts an event stream: the reply, then a snapshot (or a replay from `resume_after`), then events.
    mutating func watch(_ watch: Opq_V1_Watch, requestID: UInt64, identity: [UInt8]) {
        let scope: Watcher.Scope
        switch watch.scope {
        case .job(let id):
            guard core.job(JobID(id)) != nil else {
                return queueToClient(.reply(requestID, error: Opq_V1_Error(RequestError.unknownJob(JobID(id)))), identity: identity)
            }
            scope = .job(JobID(id))
        case .queue(let name): scope = .queue(name.isEmpty ? "default" : name)
        case .all, nil: scope = .all
        }
        absorbEffects()  // the snapshot must reflect exactly the events numbered so far
        var watcher = Watcher(identity: identity, watch: requestID, scope: scope, previous: events.lastSequence)
        watcher.includesOutput = watch.includeOutput
        watcher.eventDelay = min(watch.eventDelaySeconds, Watcher.maxEventDelay)
        let sameInstance = !watch.hasInstance || watch.instance == instanceID
        if watch.hasResumeAfter, sameInstance, let replay = events.events(after: watch.resumeAfter) {
            queueToClient(.reply(requestID) {
                $0.watching.resumed = true
                $0.watching.instance = instanceID
            }, identity: identity)
            watcher.previous = watch.resumeAfter
            watcher.pending = replay.filter { event in
                switch event.kind {
                case .operation(let change):
                    return watcher.covers(job: change.job) { core.queueName(of: change.operation) }
                case .jobFinished(let job):
                    return watcher.covers(job: job) { nil }
                case .progress(let progress):
                    let id = OperationID(progress.operation)
                    return watcher.covers(job: core.dispatchDetails(id)?.job ?? JobID(0)) { core.queueName(of: id) }
                }
            }
        } else {
            queueToClient(.reply(requestID) {
                $0.watching.resumed = false
                $0.watching.instance = instanceID
            }, identity: identity)
            for part in snapshot(of: scope, watch: requestID) { queueToClient(part, identity: identity) }
        }
        if watcher.includesOutput { announceRunningOutput(to: watcher) }
        watchers[watcher.key] = watcher
    }

    /// The state a stream starts from, in parts of at most `defaultPage` operations.
    func snapshot(of scope: Watcher.Scope, watch: UInt64) -> [Opq_V1_CoordinatorToClient] {
        var operations: [OperationID] = []
        var jobs: [Opq_V1_JobInfo] = []
        var queues: [Opq_V1_QueueInfo] = []
        switch scope {
        case .job(let id):
            if let job = core.job(id) {
                operations = job.operations
                jobs = [Opq_V1_JobInfo(job)]
            }
        case .queue(let name):
            operations = core.operations(inQueue: name)
            queues = [queueInfo(name)]
        case .all:
            operations = core.queueNames.flatMap { core.operations(inQueue: $0) }.sorted()
            jobs = (0..<core.jobCount).compactMap { core.job(JobID(UInt64($0 + 1))) }.filter { !$0.isFinished }.map(Opq_V1_JobInfo.init)
            queues = core.queueNames.map(queueInfo)
        }
        var parts: [Opq_V1_CoordinatorToClient] = []
        var start = 0
        repeat {
            let end = min(operations.count, start + CoordinatorState.defaultPage)
            var part = Opq_V1_CoordinatorToClient()
            part.snapshot.watch = watch
            part.snapshot.sequence = events.lastSequence
            part.snapshot.operations = operations[start..<end].map { operationInfo($0, includeOutput: false).info }
            if start == 0 {
                part.snapshot.jobs = jobs
                part.snapshot.queues = queues
            }
            part.snapshot.more = end < operations.count
            parts.append(part)
            start = end
        } while start < operations.count
        return parts
    }
}
