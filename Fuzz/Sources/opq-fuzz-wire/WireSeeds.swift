import Foundation
import OPQCore
import OPQWire

/// Valid messages of every kind, written as fuzz inputs (see the layout in FuzzWire.swift): the seed
/// corpus in Fuzz/Corpus/wire. Regenerate with `OPQ_FUZZ_WRITE_SEEDS=Fuzz/Corpus/wire opq-fuzz-wire`.
enum WireSeeds {
    static func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var count = 0
        func save<M: WireEnvelope>(_ name: String, _ envelope: UInt8, _ message: M, rawFrames: UInt8 = 0, routed: Bool = false) throws {
            let selector = envelope | (routed ? 0b100 : 0) | rawFrames << 4
            let bytes = [selector] + (try message.serializedBytes() as [UInt8])
            try Data(bytes).write(to: URL(fileURLWithPath: directory).appendingPathComponent("\(name).bin"))
            count += 1
        }
        for (name, message) in workerMessages {
            try save("worker-\(name)", 0, message, rawFrames: name == "finished" ? 2 : 0, routed: true)
        }
        for (name, message) in toWorker { try save("to-worker-\(name)", 1, message) }
        for (name, message) in clientRequests { try save("client-\(name)", 2, message, routed: true) }
        for (name, message) in toClient { try save("to-client-\(name)", 3, message, rawFrames: name == "operation" ? 2 : 0) }
        // Layout 1: frames split at 0xFE 0xFF, here a valid request with a wrong signature.
        let body: [UInt8] = try clientRequests[0].1.serializedBytes()
        try Data([0b1010] + Array("OPQ/2".utf8) + WireInput.separator + body)
            .write(to: URL(fileURLWithPath: directory).appendingPathComponent("split-bad-signature.bin"))
        print("wrote \(count + 1) seeds to \(directory)")
    }

    static let command = Command(["/bin/sh", "-c", "echo $0", "x"], environment: ["A": "1"], workingDirectory: "/tmp")

    static var workerMessages: [(String, Opq_V1_WorkerMessage)] {
        var finished = Opq_V1_Finished(OperationID(3), attempt: 2, report: AttemptReport(.failed, reason: .exitStatus, exitCode: 7),
                                       duration: 1.5)
        var raw: [[UInt8]] = []
        finished.attachOutput(stdout: [0], stderr: [1, 1], to: &raw)
        finished.errorMessage = "failed"
        return [
            ("register", .with {
                $0.register = .with {
                    $0.protocolVersion = WireLimits.protocolVersion
                    $0.workerName = "w1"
                    $0.slots = 4
                    $0.queueSet = ["default", "render"]
                    $0.labels = ["gpu": "1"]
                    $0.held = [Opq_V1_AttemptRef(OperationID(1), attempt: 1)]
                    $0.handlers = ["echo"]
                    $0.host = "host"
                    $0.pid = 42
                }
            }),
            ("heartbeat", .heartbeat),
            ("started", .reports([.started(OperationID(1), attempt: 1)])),
            ("finished", .reports([.finished(finished)])),
            ("progress", .reports([.progress(.with { $0.operation = 1; $0.attempt = 1; $0.fraction = 0.5; $0.message = "half" })])),
            ("goodbye", .with { $0.goodbye = .with { $0.reason = "SIGTERM"; $0.handedBack = [Opq_V1_AttemptRef(OperationID(2), attempt: 1)] } }),
        ]
    }

    static var toWorker: [(String, Opq_V1_CoordinatorToWorker)] {
        let dispatch = Opq_V1_Dispatch(OperationID(5), attempt: 1, details: Scheduler.DispatchDetails(
            name: "encode", job: JobID(2), queue: "default", work: .command(command), qualityOfService: .utility, timeout: 30),
            killGrace: 5)
        var handler = dispatch
        handler.work = Opq_V1_Work(.handler(name: "echo", payload: [1, 2, 3]))
        var list = dispatch
        list.work = Opq_V1_Work(.commands([command, Command(["true"])]))
        var calls = dispatch
        calls.work = Opq_V1_Work(.handlers([HandlerCall("echo", payload: [1]), HandlerCall("sha256", text: "x")]))
        return [
            ("welcome", .with {
                $0.welcome = .with { $0.protocolVersion = 1; $0.heartbeatIntervalSeconds = 1; $0.liveness = 3; $0.coordinatorID = "c" }
                $0.reportsDurable = 4
            }),
            ("dispatch", .orders([.dispatch(dispatch), .dispatch(handler), .dispatch(list), .dispatch(calls)])),
            ("kill", .orders([.kill(Opq_V1_Kill(OperationID(5), attempt: 1, reason: .cancel, grace: 2))])),
            ("disconnect", .disconnect(.missingField("WorkerMessage.body"))),
        ]
    }

    static var clientRequests: [(String, Opq_V1_ClientRequest)] {
        let submission = Submission([
            OperationSpec(name: "a", work: .command(command), priority: .high, retries: 2, timeout: 10, labels: ["gpu": "1"]),
            OperationSpec(name: "b", work: .handler(name: "echo", payload: [9]), dependencies: [.name("a"), .id(OperationID(1))],
                          requires: .success),
            OperationSpec(name: "", queue: "q", work: .empty, isBarrier: true),
        ], queueSettings: [(queue: "q", settings: QueueSettings(maxConcurrent: 2, isSuspended: false))])
        return [
            ("submit", .request(1) { $0.submit = Opq_V1_Submit(submission, idempotencyKey: "key") }),
            ("cancel", .request(2) { $0.cancel = .with { $0.operation = 1 } }),
            ("cancel-all", .request(3) { $0.cancel = .with { $0.all = Opq_V1_All() } }),
            ("set-queue", .request(4) { $0.setQueue = Opq_V1_QueueSettings(queue: "q", QueueSettings(maxConcurrent: -1, isSuspended: true)) }),
            ("set-priority", .request(5) { $0.setPriority = .with { $0.operation = 1; $0.priority = -4 } }),
            ("add-dependency", .request(6) { $0.addDependency = .with { $0.operation = 2; $0.dependency = 1 } }),
            ("remove-dependency", .request(7) { $0.removeDependency = .with { $0.operation = 2; $0.dependency = 1 } }),
            ("list-queues", .request(8) { $0.listQueues = Opq_V1_ListQueues() }),
            ("list-jobs", .request(9) { $0.listJobs = .with { $0.unfinishedOnly = true; $0.after = 1; $0.limit = 10 } }),
            ("get-job", .request(10) { $0.getJob = .with { $0.job = 1; $0.includeOperations = true } }),
            ("list-operations", .request(11) { $0.listOperations = .with { $0.queue = "q"; $0.states = [.ready, .finished]; $0.job = 1 } }),
            ("get-operation", .request(12) { $0.getOperation = .with { $0.operation = 1; $0.includeOutput = true } }),
            ("list-workers", .request(13) { $0.listWorkers = Opq_V1_ListWorkers() }),
            ("watch", .request(14) { $0.watch = .with { $0.job = 1; $0.resumeAfter = 3 } }),
            ("unwatch", .request(15) { $0.unwatch = .with { $0.watch = 14 } }),
            ("wait", .request(16) { $0.wait = .with { $0.queue = "q"; $0.timeoutSeconds = 1 } }),
            ("heartbeat", .request(17) { $0.heartbeat = Opq_V1_Heartbeat() }),
            ("prune", .request(18) { $0.prune = .with { $0.olderThanSeconds = 60 } }),
        ]
    }

    static var toClient: [(String, Opq_V1_CoordinatorToClient)] {
        var info = Opq_V1_OperationInfo()
        info.id = 1
        info.name = "a"
        info.job = 1
        info.state = .finished
        info.outcome = .failed
        info.reason = .exitStatus
        info.exitCode = 1
        info.work = Opq_V1_Work(.command(command))
        info.stdout = .with { $0.frame = 1; $0.totalBytes = 9 }
        info.stderr = .with { $0.frame = 2; $0.totalBytes = 2 }
        var change = Opq_V1_OperationEvent()
        change.operation = 1
        change.job = 1
        change.state = .executing
        change.attempt = 1
        change.worker = "w1"
        change.time = 1_700_000_000
        return [
            ("error", .reply(1, error: .with { $0.code = .unknownDependency; $0.index = 1; $0.name = "b"; $0.reference = .with { $0.name = "x" } })),
            ("submitted", .reply(2) { $0.submitted = .with { $0.job = 1; $0.operations = [1, 2, 3] } }),
            ("operation", .reply(3) { $0.operation = info }),
            ("jobs", .reply(4) { $0.jobs = .with { $0.jobs = [.with { $0.id = 1; $0.operations = [1]; $0.finished = true }] } }),
            ("waited", .reply(5) { $0.waited = .with { $0.timedOut = true; $0.queue = .with { $0.name = "q"; $0.maxConcurrent = -1 } } }),
            ("snapshot", .with { $0.snapshot = .with { $0.watch = 6; $0.sequence = 9; $0.operations = [info]; $0.more = true } }),
            ("events", .with {
                $0.events = .with {
                    $0.watch = 6
                    $0.previous = 9
                    $0.items = [.with { $0.sequence = 10; $0.operation = change }, .with { $0.sequence = 11; $0.jobFinished = 1 }]
                }
            }),
            ("heartbeat", .with { $0.heartbeat = Opq_V1_Heartbeat() }),
        ]
    }
}
