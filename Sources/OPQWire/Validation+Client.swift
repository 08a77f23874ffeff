import OPQCore

/// Validation of the client ↔ coordinator envelopes. Field paths follow the `.proto` field names.
///
/// Submissions are checked here only for what the core cannot report better: sizes, enum values and
/// references. Semantic mistakes (empty argv, bad timeout, empty handler name, duplicate names, cycles)
/// are left to the core, whose `SubmissionError` carries the operation's index and name.

extension Opq_V1_ClientRequest: WireEnvelope {
    /// Validates a request from a client (see `WireEnvelope.validate(rawFrames:)`).
    public func validate(rawFrames: Int) throws(WireError) {
        let path = "ClientRequest"
        switch body {
        case nil:
            throw .missingField("\(path).body")
        case .submit(let submit):
            try submit.validate(path + ".submit")
        case .cancel(let cancel):
            switch cancel.target {
            case nil: throw .missingField(path + ".cancel.target")
            case .operation(let id): try Check.id(id, path + ".cancel.operation")
            case .job(let id): try Check.id(id, path + ".cancel.job")
            case .queue(let queue): try Check.name(queue, path + ".cancel.queue", allowEmpty: false)
            case .all: break
            }
        case .setQueue(let settings):
            try Check.name(settings.queue, path + ".set_queue.queue")
        case .setPriority(let change):
            try Check.id(change.operation, path + ".set_priority.operation")
        case .addDependency(let edge):
            try Check.id(edge.operation, path + ".add_dependency.operation")
            try Check.id(edge.dependency, path + ".add_dependency.dependency")
        case .removeDependency(let edge):
            try Check.id(edge.operation, path + ".remove_dependency.operation")
            try Check.id(edge.dependency, path + ".remove_dependency.dependency")
        case .getJob(let request):
            try Check.id(request.job, path + ".get_job.job")
            if request.hasSummarySlowest {
                try Check.that(request.summarySlowest <= WireLimits.maxSummarySlowest, path + ".get_job.summary_slowest",
                               "must be at most \(WireLimits.maxSummarySlowest)")
            }
        case .listOperations(let request):
            try Check.name(request.queue, path + ".list_operations.queue")
            try Check.count(request.states.count, path + ".list_operations.states", maximum: 16)
            for (k, state) in request.states.enumerated() {
                try Check.known(state, "\(path).list_operations.states[\(k)]", allowZero: false)
            }
        case .getOperation(let request):
            try Check.id(request.operation, path + ".get_operation.operation")
        case .watch(let watch):
            switch watch.scope {
            case nil: throw .missingField(path + ".watch.scope")
            case .job(let id): try Check.id(id, path + ".watch.job")
            case .queue(let queue): try Check.name(queue, path + ".watch.queue", allowEmpty: false)
            case .all: break
            }
            try Check.that(watch.instance.utf8.count <= 256, path + ".watch.instance", "must be at most 256 bytes")
            try Check.seconds(watch.eventDelaySeconds, path + ".watch.event_delay_seconds")
        case .wait(let wait):
            switch wait.target {
            case nil: throw .missingField(path + ".wait.target")
            case .operation(let id): try Check.id(id, path + ".wait.operation")
            case .job(let id): try Check.id(id, path + ".wait.job")
            case .queue(let queue): try Check.name(queue, path + ".wait.queue", allowEmpty: false)
            }
            if wait.hasTimeoutSeconds { try Check.seconds(wait.timeoutSeconds, path + ".wait.timeout_seconds") }
        case .prune(let prune):
            if prune.hasOlderThanSeconds {
                try Check.that(prune.olderThanSeconds >= 0 && prune.olderThanSeconds.isFinite, path + ".prune.older_than_seconds",
                               "must be a finite number of seconds ≥ 0")
            }
        case .readOutput(let read):
            try read.validate(path + ".read_output")
        case .reserve(let reserve):
            try Check.that(reserve.count >= 1 && reserve.count <= WireLimits.maxReservations, path + ".reserve.count",
                           "must be 1 to \(WireLimits.maxReservations), not \(reserve.count)")
        case .renewReservations(let renew):
            try Check.count(renew.ids.count, path + ".renew_reservations.ids", maximum: WireLimits.maxReservations)
            for (k, id) in renew.ids.enumerated() {
                try Check.that(OperationID(id).isReservation, "\(path).renew_reservations.ids[\(k)]",
                               "must be a reservation (an id from a Reserve), not \(id)")
            }
        case .listQueues, .listJobs, .listWorkers, .unwatch, .heartbeat:
            break
        }
    }
}

extension Opq_V1_Submit {
    func validate(_ path: String) throws(WireError) {
        try Check.count(operations.count, path + ".operations", maximum: WireLimits.maxOperationsPerSubmission)
        for (k, spec) in operations.enumerated() {
            try spec.validate("\(path).operations[\(k)]")
        }
        try Check.count(queueSettings.count, path + ".queue_settings")
        for (k, settings) in queueSettings.enumerated() {
            try Check.name(settings.queue, "\(path).queue_settings[\(k)].queue")
        }
        try Check.name(idempotencyKey, path + ".idempotency_key")
    }
}

extension Opq_V1_OperationSpec {
    func validate(_ path: @autoclosure () -> String) throws(WireError) {
        try Check.name(name, path() + ".name")
        try Check.name(queue, path() + ".queue")
        try Check.work(work, path() + ".work", strict: false)
        try Check.count(dependencies.count, path() + ".dependencies")
        for (k, dependency) in dependencies.enumerated() {
            switch dependency.target {
            case nil: throw .missingField("\(path()).dependencies[\(k)].target")
            case .name(let name): try Check.name(name, "\(path()).dependencies[\(k)].name", allowEmpty: false)
            case .id(let id): try Check.id(id, "\(path()).dependencies[\(k)].id")
            }
        }
        try Check.count(dependants.count, path() + ".dependants")
        for (k, dependant) in dependants.enumerated() { try Check.id(dependant, "\(path()).dependants[\(k)]") }
        try Check.that(reservation == 0 || OperationID(reservation).isReservation, path() + ".reservation",
                       "must be 0 or a reservation (an id from a Reserve), not \(reservation)")
        try Check.known(qos, path() + ".qos")
        try Check.known(requires, path() + ".requires")
        try Check.that(retries <= WireLimits.maxRetries, path() + ".retries",
                       "must be at most \(WireLimits.maxRetries), not \(retries)")
        try Check.map(labels, path() + ".labels")
        try Check.that(cpus <= WireLimits.maxCpus, path() + ".cpus", "must be at most \(WireLimits.maxCpus), not \(cpus)")
        try Check.that(memoryBytes <= WireLimits.maxMemory, path() + ".memory_bytes",
                       "must be at most \(WireLimits.maxMemory), not \(memoryBytes)")
    }
}

extension Opq_V1_CoordinatorToClient: WireEnvelope {
    /// Validates a message from the coordinator to a client (see `WireEnvelope.validate(rawFrames:)`).
    public func validate(rawFrames: Int) throws(WireError) {
        switch body {
        case nil:
            throw .missingField("CoordinatorToClient.body")
        case .reply(let reply):
            try reply.validate("CoordinatorToClient.reply", rawFrames: rawFrames)
        case .snapshot(let snapshot):
            let path = "CoordinatorToClient.snapshot"
            try Check.count(snapshot.operations.count, path + ".operations", maximum: WireLimits.maxBatchItems)
            for (k, info) in snapshot.operations.enumerated() {
                try info.validate("\(path).operations[\(k)]", rawFrames: rawFrames)
            }
        case .events(let events):
            let path = "CoordinatorToClient.events.items"
            try Check.count(events.items.count, path, minimum: 1, maximum: WireLimits.maxBatchItems)
            for (k, event) in events.items.enumerated() {
                try Check.that(event.sequence >= 1, "\(path)[\(k)].sequence", "must be ≥ 1")
                switch event.kind {
                case nil: throw .missingField("\(path)[\(k)].kind")
                case .operation(let change): try change.validate("\(path)[\(k)].operation")
                case .jobFinished(let job): try Check.id(job, "\(path)[\(k)].job_finished")
                case .progress(let progress): try progress.validate("\(path)[\(k)].progress")
                }
            }
        case .heartbeat:
            break
        case .output(let push):
            try push.validate("CoordinatorToClient.output", rawFrames: rawFrames)
        }
    }
}

extension Opq_V1_Reply {
    func validate(_ path: String, rawFrames: Int) throws(WireError) {
        switch result {
        case nil:
            throw .missingField(path + ".result")
        case .error(let error):
            try Check.known(error.code, path + ".error.code", allowZero: false)
        case .submitted(let receipt):
            try Check.id(receipt.job, path + ".submitted.job")
        case .operations(let list):
            for (k, info) in list.operations.enumerated() {
                try info.validate("\(path).operations.operations[\(k)]", rawFrames: rawFrames)
            }
        case .operation(let info):
            try info.validate(path + ".operation", rawFrames: rawFrames)
        case .job(let job):
            for (k, info) in job.details.enumerated() {
                try info.validate("\(path).job.details[\(k)]", rawFrames: rawFrames)
            }
        case .waited(let result):
            if case .operation(let info) = result.result {
                try info.validate(path + ".waited.operation", rawFrames: rawFrames)
            }
        case .output(let slice):
            try slice.validate(path + ".output", rawFrames: rawFrames)
        case .reserved(let reserved):
            try Check.count(reserved.ids.count, path + ".reserved.ids", minimum: 1, maximum: WireLimits.maxReservations)
            try Check.seconds(reserved.leaseSeconds, path + ".reserved.lease_seconds")
            for (k, id) in reserved.ids.enumerated() {
                try Check.that(OperationID(id).isReservation, "\(path).reserved.ids[\(k)]", "must be a reservation (just above 2^62), not \(id)")
            }
        case .renewed(let renewed):
            try Check.count(renewed.gone.count, path + ".renewed.gone", maximum: WireLimits.maxReservations)
            try Check.seconds(renewed.leaseSeconds, path + ".renewed.lease_seconds")
        case .done, .cancelled, .dependency, .queues, .jobs, .workers, .watching, .pruned:
            break
        }
    }
}

extension Opq_V1_OperationInfo {
    func validate(_ path: @autoclosure () -> String, rawFrames: Int) throws(WireError) {
        try Check.id(id, path() + ".id")
        try Check.known(state, path() + ".state", allowZero: false)
        try Check.known(outcome, path() + ".outcome")
        try Check.known(reason, path() + ".reason")
        try Check.known(qos, path() + ".qos")
        try Check.known(requires, path() + ".requires")
        if hasStdout { try Check.frame(stdout.frame, rawFrames: rawFrames, path() + ".stdout.frame") }
        if hasStderr { try Check.frame(stderr.frame, rawFrames: rawFrames, path() + ".stderr.frame") }
        try Check.count(story.count, path() + ".story")
        for (index, step) in story.enumerated() {
            if step.hasTime { try Check.that(step.time.isFinite, path() + ".story[\(index)].time", "must be a finite timestamp") }
        }
    }
}

extension Opq_V1_OperationEvent {
    func validate(_ path: @autoclosure () -> String) throws(WireError) {
        try Check.id(operation, path() + ".operation")
        try Check.id(job, path() + ".job")
        try Check.known(state, path() + ".state", allowZero: false)
        try Check.known(outcome, path() + ".outcome")
        try Check.known(reason, path() + ".reason")
        try Check.that(time.isFinite, path() + ".time", "must be a finite timestamp")
    }
}
