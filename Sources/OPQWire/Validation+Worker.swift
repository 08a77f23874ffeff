/// Validation of the worker ↔ coordinator envelopes. Field paths follow the `.proto` field names.

extension Opq_V1_WorkerMessage: WireEnvelope {
    /// Validates a message from a worker (see `WireEnvelope.validate(rawFrames:)`).
    public func validate(rawFrames: Int) throws(WireError) {
        switch body {
        case nil:
            throw .missingField("WorkerMessage.body")
        case .register(let register):
            try register.validate("WorkerMessage.register")
        case .heartbeat:
            break
        case .reports(let reports):
            let path = "WorkerMessage.reports.items"
            try Check.count(reports.items.count, path, minimum: 1, maximum: WireLimits.maxBatchItems)
            for (k, item) in reports.items.enumerated() {
                try item.validate("\(path)[\(k)]", rawFrames: rawFrames)
            }
        case .goodbye(let goodbye):
            try Check.count(goodbye.handedBack.count, "WorkerMessage.goodbye.handed_back", maximum: WireLimits.maxBatchItems)
            for (k, ref) in goodbye.handedBack.enumerated() {
                try Check.attempt(ref, "WorkerMessage.goodbye.handed_back[\(k)]")
            }
        }
    }
}

extension Opq_V1_Register {
    func validate(_ path: String) throws(WireError) {
        if protocolVersion != WireLimits.protocolVersion {
            throw .unsupportedVersion(found: protocolVersion, supported: WireLimits.protocolVersion)
        }
        try Check.name(workerName, path + ".worker_name", allowEmpty: false)
        try Check.that((0...WireLimits.maxSlots).contains(slots), path + ".slots",
                       "must be from 0 to \(WireLimits.maxSlots), not \(slots)")
        if hasQueueFilter {
            try Check.count(queueFilter.queues.count, path + ".queue_filter.queues")
            for (k, queue) in queueFilter.queues.enumerated() {
                try Check.name(queue, "\(path).queue_filter.queues[\(k)]", allowEmpty: false)
            }
        }
        try Check.map(labels, path + ".labels")
        try Check.that(cpus <= WireLimits.maxCpus, path + ".cpus", "must be at most \(WireLimits.maxCpus), not \(cpus)")
        if hasMemoryBytes {
            try Check.that(memoryBytes <= WireLimits.maxMemory, path + ".memory_bytes",
                           "must be at most \(WireLimits.maxMemory), not \(memoryBytes)")
        }
        try Check.count(held.count, path + ".held", maximum: WireLimits.maxBatchItems)
        for (k, ref) in held.enumerated() { try Check.attempt(ref, "\(path).held[\(k)]") }
        try Check.count(handlers.count, path + ".handlers")
        for (k, handler) in handlers.enumerated() { try Check.name(handler, "\(path).handlers[\(k)]", allowEmpty: false) }
        try Check.name(host, path + ".host")
        try Check.that(sessionSecret.count <= 64, path + ".session_secret", "must be at most 64 bytes, not \(sessionSecret.count)")
    }
}

extension Opq_V1_Report {
    func validate(_ path: @autoclosure () -> String, rawFrames: Int) throws(WireError) {
        switch kind {
        case nil:
            throw .missingField(path() + ".kind")
        case .started(let ref):
            try Check.attempt(ref, path() + ".started")
        case .finished(let finished):
            try finished.validate(path() + ".finished", rawFrames: rawFrames)
        case .progress(let progress):
            try progress.validate(path() + ".progress")
        case .output(let chunk):
            try chunk.validate(path() + ".output", rawFrames: rawFrames)
        }
    }
}

extension Opq_V1_Finished {
    func validate(_ path: @autoclosure () -> String, rawFrames: Int) throws(WireError) {
        try Check.id(operation, path() + ".operation")
        try Check.attempt(attempt, path() + ".attempt")
        try Check.known(status, path() + ".status", allowZero: false)
        try Check.known(reason, path() + ".reason")
        try Check.seconds(durationSeconds, path() + ".duration_seconds")
        if hasStdout { try Check.frame(stdout.frame, rawFrames: rawFrames, path() + ".stdout.frame") }
        if hasStderr { try Check.frame(stderr.frame, rawFrames: rawFrames, path() + ".stderr.frame") }
        if hasResult { try Check.frame(result.frame, rawFrames: rawFrames, path() + ".result.frame") }
    }
}

extension Opq_V1_Progress {
    func validate(_ path: @autoclosure () -> String) throws(WireError) {
        try Check.id(operation, path() + ".operation")
        try Check.attempt(attempt, path() + ".attempt")
        if hasFraction {
            try Check.that((0...1).contains(fraction), path() + ".fraction", "must be from 0 to 1, not \(fraction)")
        }
        let bytes = message.utf8.count
        try Check.that(bytes <= WireLimits.maxProgressMessageBytes, path() + ".message",
                       "is \(bytes) bytes long; at most \(WireLimits.maxProgressMessageBytes) are allowed")
    }

    /// `message` shortened (at a character boundary) to at most ``WireLimits/maxProgressMessageBytes``
    /// bytes, with "…" marking a cut: what a worker puts in `Progress.message`.
    public static func clampedMessage(_ message: String) -> String {
        guard message.utf8.count > WireLimits.maxProgressMessageBytes else { return message }
        let ellipsis = "…"
        let room = WireLimits.maxProgressMessageBytes - ellipsis.utf8.count
        var result = ""
        var bytes = 0
        for character in message {
            bytes += character.utf8.count
            guard bytes <= room else { break }
            result.append(character)
        }
        return result + ellipsis
    }
}

extension Opq_V1_CoordinatorToWorker: WireEnvelope {
    /// Validates a message from the coordinator (see `WireEnvelope.validate(rawFrames:)`).
    public func validate(rawFrames: Int) throws(WireError) {
        switch body {
        case nil:
            throw .missingField("CoordinatorToWorker.body")
        case .welcome(let welcome):
            if welcome.protocolVersion != WireLimits.protocolVersion {
                throw .unsupportedVersion(found: welcome.protocolVersion, supported: WireLimits.protocolVersion)
            }
            try Check.seconds(welcome.heartbeatIntervalSeconds, "CoordinatorToWorker.welcome.heartbeat_interval_seconds", positive: true)
            try Check.that(welcome.liveness >= 1, "CoordinatorToWorker.welcome.liveness", "must be at least 1")
        case .heartbeat:
            break
        case .orders(let orders):
            let path = "CoordinatorToWorker.orders.items"
            try Check.count(orders.items.count, path, minimum: 1, maximum: WireLimits.maxBatchItems)
            for (k, order) in orders.items.enumerated() {
                switch order.kind {
                case nil: throw .missingField("\(path)[\(k)].kind")
                case .dispatch(let dispatch): try dispatch.validate("\(path)[\(k)].dispatch")
                case .kill(let kill): try kill.validate("\(path)[\(k)].kill")
                }
            }
        case .disconnect(let disconnect):
            try Check.known(disconnect.code, "CoordinatorToWorker.disconnect.code")
        }
    }
}

extension Opq_V1_Dispatch {
    func validate(_ path: @autoclosure () -> String) throws(WireError) {
        try Check.id(operation, path() + ".operation")
        try Check.attempt(attempt, path() + ".attempt")
        try Check.id(job, path() + ".job")
        try Check.name(name, path() + ".name")
        try Check.name(queue, path() + ".queue")
        try Check.present(hasWork, path() + ".work")
        try Check.work(work, path() + ".work", strict: true)
        try Check.known(qos, path() + ".qos")
        if hasTimeoutSeconds { try Check.seconds(timeoutSeconds, path() + ".timeout_seconds", positive: true) }
        try Check.seconds(killGraceSeconds, path() + ".kill_grace_seconds")
        for (index, dependency) in dependencies.enumerated() {
            try Check.id(dependency.operation, path() + ".dependencies[\(index)].operation")
            try Check.known(dependency.outcome, path() + ".dependencies[\(index)].outcome")
        }
    }
}

extension Opq_V1_Kill {
    func validate(_ path: @autoclosure () -> String) throws(WireError) {
        try Check.id(operation, path() + ".operation")
        try Check.attempt(attempt, path() + ".attempt")
        try Check.known(reason, path() + ".reason", allowZero: false)
        try Check.seconds(graceSeconds, path() + ".grace_seconds")
    }
}
