import Foundation
import OPQCore
import OPQWire

/// What each side does with a message that passed validation: every conversion to core values and
/// every accessor the coordinator (`worker`, `client`), the worker (`toWorker`) and clients (`toClient`)
/// apply. None may trap on a valid message.
enum WireUse {
    /// The coordinator's view of a worker's message.
    static func worker(_ message: Opq_V1_WorkerMessage, raw: [[UInt8]]) {
        switch message.body {
        case .register(let register):
            _ = register.queueSet
            _ = register.heldAttempts
            _ = WorkerID(register.workerName)
        case .reports(let reports):
            for item in reports.items {
                switch item.kind {
                case .started(let ref): _ = (ref.held, ref.operationID)
                case .finished(let finished): use(finished, raw: raw)
                case .progress(let progress): _ = (OperationID(progress.operation), Int(progress.attempt))
                case .output(let chunk): _ = (OperationID(chunk.operation), Int(chunk.attempt), chunk.bytes(in: raw))
                case nil: break
                }
            }
        case .goodbye(let goodbye):
            _ = goodbye.handedBack.map(\.held)
        case .heartbeat, nil:
            break
        }
    }

    static func use(_ finished: Opq_V1_Finished, raw: [[UInt8]]) {
        _ = finished.report
        _ = finished.operationID
        _ = finished.stdout.bytes(in: raw)
        _ = finished.stderr.bytes(in: raw)
        _ = finished.stdout.isTruncated(in: raw)
        _ = finished.stderr.isTruncated(in: raw)
    }

    /// The coordinator's view of a client's request.
    static func client(_ request: Opq_V1_ClientRequest, raw: [[UInt8]]) {
        switch request.body {
        case .submit(let submit):
            let submission = Submission(submit)
            _ = Opq_V1_Submit(submission, idempotencyKey: submit.idempotencyKey)
        case .cancel(let cancel):
            if case .operation(let id) = cancel.target { _ = OperationID(id) }
            if case .job(let id) = cancel.target { _ = JobID(id) }
        case .setQueue(let settings):
            _ = settings.core
        case .setPriority(let change):
            _ = (OperationID(change.operation), QueuePriority(wire: change.priority))
        case .addDependency(let edge), .removeDependency(let edge):
            _ = (OperationID(edge.operation), OperationID(edge.dependency))
        case .listOperations(let list):
            _ = list.states.map(OperationState.init)
        case .wait(let wait):
            if case .operation(let id) = wait.target { _ = OperationID(id) }
            if case .job(let id) = wait.target { _ = JobID(id) }
        case .readOutput(let read):
            _ = (OperationID(read.operation), read.offset, read.maxBytes)
        case .reserve(let reserve): _ = Int(reserve.count)
        case .renewReservations(let renew): _ = renew.ids.map(OperationID.init)
        case .getJob, .getOperation, .watch, .unwatch, .listQueues, .listJobs, .listWorkers, .heartbeat, .prune, nil:
            break
        }
    }

    /// A worker's view of the coordinator's message.
    static func toWorker(_ message: Opq_V1_CoordinatorToWorker, raw: [[UInt8]]) {
        switch message.body {
        case .orders(let orders):
            for order in orders.items {
                switch order.kind {
                case .dispatch(let dispatch):
                    _ = Work(dispatch.work)
                    _ = QualityOfService(dispatch.qos)
                    _ = (OperationID(dispatch.operation), JobID(dispatch.job), Int(dispatch.attempt))
                case .kill(let kill):
                    _ = kill.reason.core
                case nil:
                    break
                }
            }
        case .welcome, .heartbeat, .disconnect, nil:
            break
        }
    }

    /// A client's view of the coordinator's message.
    static func toClient(_ message: Opq_V1_CoordinatorToClient, raw: [[UInt8]]) {
        switch message.body {
        case .reply(let reply):
            switch reply.result {
            case .error(let error): _ = (error.submissionError, error.requestError)
            case .submitted(let receipt): _ = (receipt.jobID, receipt.operationIDs)
            case .operation(let info): use(info, raw: raw)
            case .operations(let list): list.operations.forEach { use($0, raw: raw) }
            case .job(let job): _ = (job.jobID, job.counts.core); job.details.forEach { use($0, raw: raw) }
            case .jobs(let list): list.jobs.forEach { _ = ($0.jobID, $0.counts.core) }
            case .queues(let list): list.queues.forEach { _ = $0.operationCount }
            case .workers(let list): list.workers.forEach { _ = $0.queueSet }
            case .waited(let result):
                if case .operation(let info) = result.result { use(info, raw: raw) }
                if case .job(let job) = result.result { _ = job.counts.core }
                if case .queue(let queue) = result.result { _ = queue.operationCount }
            case .output(let slice): _ = (slice.spooledBytes, slice.totalBytes, slice.bytes(in: raw))
            case .reserved(let reserved): _ = (reserved.ids.map(OperationID.init), reserved.leaseSeconds)
            case .renewed(let renewed): _ = (renewed.gone.map(OperationID.init), renewed.leaseSeconds)
            case .done, .cancelled, .dependency, .watching, .pruned, nil:
                break
            }
        case .snapshot(let snapshot):
            snapshot.operations.forEach { use($0, raw: raw) }
            snapshot.jobs.forEach { _ = $0.counts.core }
            snapshot.queues.forEach { _ = $0.operationCount }
        case .events(let events):
            for event in events.items {
                if case .operation(let change) = event.kind {
                    _ = (change.operationID, change.jobID, change.coreState, change.workerID)
                    _ = (change.outcome.core, change.reason.core)
                }
            }
        case .output(let push):
            _ = (push.operation, push.offset, push.bytes(in: raw))
        case .heartbeat, nil:
            break
        }
    }

    static func use(_ info: Opq_V1_OperationInfo, raw: [[UInt8]]) {
        _ = (info.operationID, info.coreState, info.queuePriority, info.coreWork)
        _ = (info.outcome.core, info.reason.core)
        _ = info.stdout.bytes(in: raw)
        _ = info.stderr.bytes(in: raw)
    }
}
