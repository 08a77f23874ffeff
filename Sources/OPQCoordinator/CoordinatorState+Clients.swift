import Logging
import OPQCore
import OPQWire

extension CoordinatorState {
    /// Decodes one request from a client (a Submit straight into the core's `Submission`). A request that
    /// does not decode gets an error reply (request id 0 when even that could not be read) and nil; the
    /// coordinator keeps serving everyone else.
    mutating func decodeClient(_ frames: [[UInt8]]) -> ReceivedClientRequest? {
        guard let identity = frames.first, !identity.isEmpty else { return nil }
        do {
            return try Frames.decodeClientRequest(frames)
        } catch {
            logger.info("malformed request from client", metadata: ["error": "\(error)"])
            refuseNow(Self.requestID(in: frames), Opq_V1_Error(error), identity: identity)
            return nil
        }
    }

    /// One decoded request from a client, as it came in `frames`. `journalRefusal` is the loop's answer
    /// to whether the journal can take it now (nil = it can, or it is a read).
    mutating func handleClient(_ received: ReceivedClientRequest, frames: [[UInt8]], journalRefusal: Opq_V1_Error?, now: Double) {
        let request = received.message
        let identity = frames[0]
        let id = request.requestID
        switch request.body {
        case .submit: begin(.submit)
        case .cancel: begin(.cancel)
        case .heartbeat: break
        default: begin(.clientRequest)
        }
        if clientBacklog.isFull(identity) {
            if case .heartbeat = request.body { return }
            // Refused before it is applied: the client is not reading its replies (ClientOutbox's policy).
            var busy = Opq_V1_Error()
            busy.code = .internal
            busy.message = """
                request not applied: \(clientBacklog.count(for: identity)) replies to this connection are still \
                unread; read them, then send it again
                """
            refuseNow(id, busy, identity: identity)
            return
        }
        func reply(_ fill: (inout Opq_V1_Reply) -> Void) { queueToClient(.reply(id, fill), identity: identity) }
        func refuse(_ error: RequestError) { queueToClient(.reply(id, error: Opq_V1_Error(error)), identity: identity) }
        if let full = journalRefusal {
            return queueToClient(.reply(id, error: full), identity: identity)
        }

        switch request.body {
        case .submit:
            if let submission = received.submission { submit(submission, received: frames[2], requestID: id, identity: identity, now: now) }
        case .cancel(let cancel):
            do {
                let cancelled = try self.cancel(cancel, now: now)
                reply { $0.cancelled.operations = cancelled.map(\.rawValue) }
            } catch { refuse(error) }
        case .setQueue(let settings):
            let (queue, values) = settings.core
            do {
                try core.configure(queue: queue, values, at: now)
                reply { $0.done = Opq_V1_Done() }
            } catch { refuse(error) }
        case .setPriority(let change):
            do {
                try core.setPriority(QueuePriority(wire: change.priority), of: OperationID(change.operation), at: now)
                reply { $0.done = Opq_V1_Done() }
            } catch { refuse(error) }
        case .addDependency(let edge):
            do {
                let changed = try core.addDependency(OperationID(edge.operation), on: OperationID(edge.dependency), at: now)
                reply { $0.dependency.changed = changed }
            } catch { refuse(error) }
        case .removeDependency(let edge):
            do {
                let changed = try core.removeDependency(OperationID(edge.operation), on: OperationID(edge.dependency), at: now)
                reply { $0.dependency.changed = changed }
            } catch { refuse(error) }
        case .reserve(let reserve):
            do {
                let ids = try self.reserve(Int(reserve.count), now: now)
                reply {
                    $0.reserved.ids = ids.map(\.rawValue)
                    $0.reserved.leaseSeconds = configuration.reservationLease
                }
            } catch { refuse(error) }
        case .renewReservations(let renew):
            let gone = renewReservations(renew.ids.map(OperationID.init), now: now)
            reply {
                $0.renewed.gone = gone.map(\.rawValue)
                $0.renewed.leaseSeconds = configuration.reservationLease
            }
        case .listQueues:
            reply { $0.queues.queues = core.queueNames.map(queueInfo) }
        case .listJobs(let list):
            reply { $0.jobs = listJobs(list) }
        case .getJob(let get):
            guard let job = core.job(JobID(get.job)) else { return refuse(.unknownJob(JobID(get.job))) }
            reply {
                $0.job = Opq_V1_JobInfo(job)
                if get.includeOperations { $0.job.details = job.operations.map { operationInfo($0, includeOutput: false).info } }
                if get.hasSummarySlowest { $0.job.summary = jobSummary(of: job.operations, slowest: Int(get.summarySlowest)) }
            }
        case .listOperations(let list):
            reply { $0.operations = listOperations(list) }
        case .getOperation(let get):
            let operation = OperationID(get.operation)
            guard core.operation(operation) != nil else { return queueToClient(.reply(id, error: unknownOperation(operation)), identity: identity) }
            var (info, raw) = operationInfo(operation, includeOutput: get.includeOutput)
            attachResult(of: operation, to: &info, raw: &raw, include: get.includeResult)
            info.blockers = core.blockers(of: operation).map(Opq_V1_Blocker.init)
            if get.includeStory, let story = story(of: operation) {
                info.story = story.entries.map(Opq_V1_StoryStep.init)
                info.storyOmitted = UInt32(clamping: story.omitted)
                info.storyComplete = story.isComplete
            }
            queueToClient(.reply(id) { $0.operation = info }, raw: raw, identity: identity)
        case .listWorkers:
            reply { $0.workers.workers = workerInfos() }
        case .watch(let watch):
            self.watch(watch, requestID: id, identity: identity)
        case .unwatch(let unwatch):
            watchers[Watcher.Key(identity: identity, watch: unwatch.watch)] = nil
            reply { $0.done = Opq_V1_Done() }
        case .wait(let wait):
            self.wait(wait, requestID: id, identity: identity, now: now)
        case .prune(let prune):
            actions.append(.prune(prune, requestID: id, identity: identity))
        case .readOutput(let read):
            let operation = OperationID(read.operation)
            guard core.operation(operation) != nil else { return queueToClient(.reply(id, error: unknownOperation(operation)), identity: identity) }
            actions.append(.readOutput(read, requestID: id, identity: identity))
        case .heartbeat, nil:
            break
        }
    }

    /// The request id of an undecodable request, if its bytes got that far (else 0).
    static func requestID(in frames: [[UInt8]]) -> UInt64 {
        guard frames.count >= 3, let request = try? Opq_V1_ClientRequest(serializedBytes: frames[2], partial: true) else { return 0 }
        return request.requestID
    }

    /// A submission; `received` is the request's bytes as they came, which the journal stores.
    private mutating func submit(_ submission: Submission, received: [UInt8], requestID: UInt64, identity: [UInt8], now: Double) {
        let key = submission.idempotencyKey
        if !key.isEmpty, let receipt = receipts[key] {
            queueToClient(.reply(requestID) { $0.submitted = Opq_V1_SubmitAccepted(receipt, duplicate: true) }, identity: identity)
            return
        }
        do {
            var submission = submission
            submission.received = received
            let receipt = try core.submit(submission, at: now)
            if !key.isEmpty { receipts[key] = receipt }
            logger.info("job accepted", metadata: ["job.id": "\(receipt.job)", "operations": "\(receipt.operations.count)"])
            // The submission's own events numbered first: a watch resuming after `event_sequence` gets
            // what happens to the job from here on, and no snapshot of operations the submitter just sent.
            absorbEffects()
            let accepted = Opq_V1_SubmitAccepted(receipt, eventSequence: events.lastSequence, instance: instanceID)
            queueToClient(.reply(requestID) { $0.submitted = accepted }, identity: identity)
        } catch {
            logger.info("submission refused", metadata: ["error": "\(error)"])
            queueToClient(.reply(requestID, error: Opq_V1_Error(error)), identity: identity)
        }
    }

    /// Carries out a cancel; returns what it cancelled, as the core says.
    private mutating func cancel(_ cancel: Opq_V1_Cancel, now: Double) throws(RequestError) -> [OperationID] {
        switch cancel.target {
        case .operation(let id): return try core.cancel(OperationID(id), at: now)
        case .job(let id): return try core.cancel(job: JobID(id), at: now)
        case .queue(let name): return try core.cancelAll(inQueue: name.isEmpty ? "default" : name, at: now)
        case .all:
            var cancelled: [OperationID] = []
            for queue in core.queueNames { cancelled += try core.cancelAll(inQueue: queue, at: now) }
            return cancelled
        case nil: return []
        }
    }

    private mutating func wait(_ wait: Opq_V1_Wait, requestID: UInt64, identity: [UInt8], now: Double) {
        let target: Waiter.Target
        switch wait.target {
        case .operation(let id):
            guard core.operation(OperationID(id)) != nil else {
                return queueToClient(.reply(requestID, error: unknownOperation(OperationID(id))), identity: identity)
            }
            target = .operation(OperationID(id))
        case .job(let id):
            guard core.job(JobID(id)) != nil else {
                return queueToClient(.reply(requestID, error: Opq_V1_Error(RequestError.unknownJob(JobID(id)))), identity: identity)
            }
            target = .job(JobID(id))
        case .queue(let name):
            target = .queue(name.isEmpty ? "default" : name)
        case nil:
            return
        }
        let waiter = Waiter(identity: identity, requestID: requestID, target: target,
                            deadline: wait.hasTimeoutSeconds ? now + wait.timeoutSeconds : nil)
        // Whatever this turn changed must count, so a wait never misses a finish that already happened.
        absorbEffects()
        if isSatisfied(target) {
            queueToClient(waitReply(waiter, timedOut: false), identity: identity)
        } else {
            waiters.append(waiter)
        }
    }
}
