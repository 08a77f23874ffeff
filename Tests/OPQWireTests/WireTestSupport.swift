import OPQCore
import Testing
import OPQWire

/// Encodes and decodes `message` through the full framing (DEALER side) and returns what came back.
func roundTrip<M: WireEnvelope>(_ message: M, raw: [[UInt8]] = []) throws -> (message: M, raw: [[UInt8]]) {
    let frames = try Frames.encode(message, raw: raw)
    #expect(frames[0] == Frames.signature)
    return try Frames.decode(frames, as: M.self)
}

/// The WireError `body` throws, or nil when it throws nothing (a failed expectation by the caller).
func wireError(_ body: () throws(WireError) -> Void) -> WireError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

/// Decodes `message` re-encoded as the frames of an envelope of type `M`, returning the error.
func decodeError<M: WireEnvelope>(_ message: M, raw: [[UInt8]] = []) -> WireError? {
    let body: [UInt8] = (try? message.serializedBytes()) ?? []
    return wireError { () throws(WireError) in _ = try Frames.decode([Frames.signature, body] + raw, as: M.self) }
}

enum Samples {
    static let dispatch = Opq_V1_Dispatch.with {
        $0.operation = 42
        $0.attempt = 1
        $0.name = "compile"
        $0.job = 7
        $0.queue = "build"
        $0.work = Opq_V1_Work(.command(Command(["/usr/bin/cc", "-c", "main.c"], environment: ["CC": "clang"],
                                               workingDirectory: "/src")))
        $0.qos = .userInitiated
        $0.timeoutSeconds = 30
        $0.killGraceSeconds = 10
    }

    static let finished = Opq_V1_Finished(OperationID(42), attempt: 1, report: .exited(2), duration: 1.25)

    static let workerMessages: [Opq_V1_WorkerMessage] = [
        .with {
            $0.register = .with {
                $0.protocolVersion = 1
                $0.workerName = "w1"
                $0.slots = 8
                $0.queueSet = ["build", "test"]
                $0.labels = ["gpu": "1"]
                $0.held = [Opq_V1_AttemptRef(OperationID(3), attempt: 2)]
                $0.handlers = ["resize"]
                $0.host = "a"
                $0.pid = 1234
            }
        },
        .heartbeat,
        .reports([
            .started(OperationID(42), attempt: 1),
            .progress(.with { $0.operation = 42; $0.attempt = 1; $0.fraction = 0.5; $0.message = "half" }),
            .finished(finished),
        ]),
        .with { $0.goodbye = .with { $0.reason = "SIGTERM"; $0.handedBack = [Opq_V1_AttemptRef(OperationID(9), attempt: 1)] } },
    ]

    static let coordinatorToWorker: [Opq_V1_CoordinatorToWorker] = [
        .with { $0.welcome = .with { $0.protocolVersion = 1; $0.heartbeatIntervalSeconds = 1; $0.liveness = 3; $0.coordinatorID = "c" } },
        .heartbeat,
        .orders([.dispatch(dispatch), .dispatch(.with {
            $0.operation = 43; $0.attempt = 2; $0.job = 7
            $0.work = Opq_V1_Work(.handler(name: "resize", payload: [1, 2, 3]))
        }), .kill(Opq_V1_Kill(OperationID(41), attempt: 1, reason: .cancel, grace: 5))]),
        .disconnect(.missingField("WorkerMessage.body")),
    ]

    static let clientRequests: [Opq_V1_ClientRequest] = [
        .request(1) { $0.submit = Opq_V1_Submit(ConversionSamples.submission, idempotencyKey: "k1") },
        .request(2) { $0.cancel.job = 7 },
        .request(3) { $0.cancel.all = Opq_V1_All() },
        .request(4) { $0.setQueue = Opq_V1_QueueSettings(queue: "build", QueueSettings(maxConcurrent: 2, isSuspended: true)) },
        .request(5) { $0.setPriority = .with { $0.operation = 42; $0.priority = -4 } },
        .request(6) { $0.addDependency = .with { $0.operation = 42; $0.dependency = 41 } },
        .request(7) { $0.removeDependency = .with { $0.operation = 42; $0.dependency = 41 } },
        .request(8) { $0.listQueues = Opq_V1_ListQueues() },
        .request(9) { $0.listJobs = .with { $0.unfinishedOnly = true; $0.limit = 10 } },
        .request(10) { $0.getJob = .with { $0.job = 7; $0.includeOperations = true } },
        .request(11) { $0.listOperations = .with { $0.queue = "build"; $0.states = [.ready, .executing]; $0.job = 7 } },
        .request(12) { $0.getOperation = .with { $0.operation = 42; $0.includeOutput = true } },
        .request(13) { $0.listWorkers = Opq_V1_ListWorkers() },
        .request(14) { $0.watch = .with { $0.job = 7; $0.resumeAfter = 100 } },
        .request(15) { $0.unwatch.watch = 14 },
        .request(16) { $0.wait = .with { $0.queue = "build"; $0.timeoutSeconds = 60 } },
        .request(17) { $0.heartbeat = Opq_V1_Heartbeat() },
    ]

    static let coordinatorToClient: [Opq_V1_CoordinatorToClient] = [
        .reply(1) { $0.submitted = .with { $0.job = 7; $0.operations = [40, 41, 42] } },
        .reply(2, error: Opq_V1_Error(SubmissionError.cycle(["a", "b"]))),
        .reply(3) { $0.done = Opq_V1_Done() },
        .reply(4) { $0.cancelled.operations = [41, 42] },
        .reply(5) { $0.dependency.changed = true },
        .reply(6) { $0.queues.queues = [.with { $0.name = "build"; $0.maxConcurrent = -1; $0.counts.ready = 3 }] },
        .reply(7) { $0.jobs = .with { $0.jobs = [.with { $0.id = 7; $0.operations = [40, 41] }]; $0.more = true } },
        .reply(8) { $0.operation = .with { $0.id = 42; $0.state = .finished; $0.outcome = .failed; $0.exitCode = 2; $0.stdout.frame = 1 } },
        .reply(9) { $0.workers.workers = [.with { $0.name = "w1"; $0.slots = 4; $0.operations = [42] }] },
        .reply(10) { $0.watching.resumed = false },
        .reply(11) { $0.waited = .with { $0.timedOut = true; $0.queue.name = "build" } },
        .with { $0.snapshot = .with { $0.watch = 14; $0.sequence = 100; $0.operations = [.with { $0.id = 42; $0.state = .ready }] } },
        .with {
            $0.events = .with {
                $0.watch = 14
                $0.previous = 100
                $0.items = [
                    .with { $0.sequence = 101; $0.operation = .with { $0.operation = 42; $0.job = 7; $0.state = .executing; $0.attempt = 1; $0.worker = "w1"; $0.time = 5 } },
                    .with { $0.sequence = 102; $0.jobFinished = 7 },
                ]
            }
        },
        .with { $0.heartbeat = Opq_V1_Heartbeat() },
        .reply(19) { $0.submitted = .with { $0.job = 8; $0.operations = [43]; $0.eventSequence = 912; $0.instance = "4242-17" } },
    ]
}
