import OPQCore
import Testing
import OPQWire

enum ConversionSamples {
    /// A submission that sets every field of every kind of operation.
    static let submission = Submission([
        OperationSpec(name: "fetch", queue: "net", work: .command(Command(["curl", "-O", "x"], environment: ["A": "1"], workingDirectory: "/tmp")),
                      priority: .veryHigh, qualityOfService: .userInteractive, retries: 3, timeout: 12.5,
                      labels: ["net": "yes"]),
        OperationSpec(name: "build", queue: "cpu", work: .commands([Command(["make", "a"]), Command.shell("make b")]),
                      dependencies: [.name("fetch"), .id(OperationID(99))], priority: .low,
                      qualityOfService: .background, requires: .success),
        OperationSpec(name: "resize", work: .handler(name: "resize", payload: [0, 1, 2, 255]), priority: .high,
                      qualityOfService: .utility),
        OperationSpec(name: "join", queue: "cpu", dependencies: [.name("build"), .name("resize")], priority: .veryLow,
                      isBarrier: true),
        OperationSpec(),
    ], queueSettings: [("cpu", QueueSettings(maxConcurrent: 4, isSuspended: false)), ("net", QueueSettings(maxConcurrent: -1)),
                       ("idle", QueueSettings(isSuspended: true))])
}

/// Field-by-field equality (OPQCore's OperationSpec is not Equatable).
func expectEqual(_ a: OperationSpec, _ b: OperationSpec, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(a.name == b.name, sourceLocation: sourceLocation)
    #expect(a.queue == b.queue, sourceLocation: sourceLocation)
    #expect(a.work == b.work, sourceLocation: sourceLocation)
    #expect(a.dependencies == b.dependencies, sourceLocation: sourceLocation)
    #expect(a.priority == b.priority, sourceLocation: sourceLocation)
    #expect(a.qualityOfService == b.qualityOfService, sourceLocation: sourceLocation)
    #expect(a.requires == b.requires, sourceLocation: sourceLocation)
    #expect(a.retries == b.retries, sourceLocation: sourceLocation)
    #expect(a.timeout == b.timeout, sourceLocation: sourceLocation)
    #expect(a.labels == b.labels, sourceLocation: sourceLocation)
    #expect(a.isBarrier == b.isBarrier, sourceLocation: sourceLocation)
}

@Suite struct ConversionTests {
    @Test func aSubmissionWithEveryFieldRoundTripsToAnEqualCoreValue() throws {
        let original = ConversionSamples.submission
        let request = Opq_V1_ClientRequest.request(1) { $0.submit = Opq_V1_Submit(original, idempotencyKey: "key") }
        let decoded = try roundTrip(request).message
        #expect(decoded.submit.idempotencyKey == "key")
        let back = Submission(decoded.submit)
        #expect(back.operations.count == original.operations.count)
        for (a, b) in zip(back.operations, original.operations) { expectEqual(a, b) }
        #expect(back.queueSettings.map(\.queue) == original.queueSettings.map(\.queue))
        #expect(back.queueSettings.map(\.settings) == original.queueSettings.map(\.settings))
    }

    @Test func priorityIntegersSnapTowardNormal() {
        let cases: [(Int32, QueuePriority)] = [(100, .veryHigh), (8, .veryHigh), (7, .high), (4, .high), (3, .normal),
                                               (-3, .normal), (-4, .low), (-7, .low), (-8, .veryLow), (.min, .veryLow)]
        for (value, level) in cases {
            let spec = OperationSpec(Opq_V1_OperationSpec.with { $0.priority = value })
            #expect(spec.priority == level, "priority \(value)")
        }
    }

    @Test func emptyQueueNamesMeanDefault() {
        #expect(OperationSpec(Opq_V1_OperationSpec()).queue == "default")
        #expect(Opq_V1_QueueSettings().core.queue == "default")
    }

    @Test func attemptReportsRoundTrip() throws {
        let reports: [AttemptReport] = [.succeeded, .exited(3), AttemptReport(.failed, reason: .signal, signal: 9),
                                        AttemptReport(.cancelled), AttemptReport(.failed, reason: .error),
                                        AttemptReport(.cancelled, reason: .timeout, signal: 15)]
        for report in reports {
            let message = Opq_V1_WorkerMessage.reports([.finished(Opq_V1_Finished(OperationID(5), attempt: 2, report: report, duration: 3))])
            let finished = try roundTrip(message).message.reports.items[0].finished
            #expect(finished.report == report)
            #expect(finished.operationID == OperationID(5) && finished.attempt == 2 && finished.durationSeconds == 3)
        }
    }

    @Test func registrationCarriesWhatWorkerJoinedNeeds() throws {
        let register = try roundTrip(Samples.workerMessages[0]).message.register
        #expect(register.queueSet == ["build", "test"])
        #expect(register.heldAttempts == [Scheduler.HeldAttempt(OperationID(3), attempt: 2)])
        #expect(Opq_V1_Register().queueSet == nil)
    }

    @Test func everySubmissionErrorRoundTripsWithItsDetails() throws {
        let errors: [SubmissionError] = [
            .empty, .duplicateName("a", index: 3, firstIndex: 1),
            .unknownDependency(index: 2, name: "b", reference: .name("c"), suggestion: "cc"),
            .unknownDependency(index: 0, name: "", reference: .id(OperationID(77)), suggestion: nil),
            .cycle(["a", "b", "c"]), .invalidMaxConcurrent(queue: "q", value: -5),
            .invalidField(index: 4, name: "d", field: "timeout", problem: "must be positive"),
        ]
        for error in errors {
            let reply = try roundTrip(Opq_V1_CoordinatorToClient.reply(9, error: Opq_V1_Error(error))).message.reply
            #expect(reply.requestID == 9)
            #expect(reply.error.submissionError == error)
            #expect(reply.error.message == error.description)
        }
    }

    @Test func everyRequestErrorRoundTrips() throws {
        let errors: [RequestError] = [.unknownOperation(OperationID(4)), .unknownJob(JobID(2)), .unknownQueue("x"),
                                      .invalidMaxConcurrent(queue: "q", value: -2), .cycle([OperationID(1), OperationID(2)])]
        for error in errors {
            let wire = try roundTrip(Opq_V1_CoordinatorToClient.reply(1, error: Opq_V1_Error(error))).message.reply.error
            #expect(wire.requestError == error)
        }
    }

    @Test func wireErrorsBecomeMalformedMessageErrorsNamingTheField() {
        let error = Opq_V1_Error(WireError.invalidField("ClientRequest.cancel.operation", problem: "must be an id ≥ 1, not 0"))
        #expect(error.code == .malformedMessage)
        #expect(error.field == "ClientRequest.cancel.operation")
        #expect(Opq_V1_Error(WireError.badSignature(found: [1])).code == .unsupportedProtocol)
    }

    @Test func schedulerEffectsAndSnapshotsConvert() throws {
        var scheduler = Scheduler()
        var submission = ConversionSamples.submission
        submission.operations[1].dependencies = [.name("fetch")]  // no unknown id here
        let receipt = try scheduler.submit(submission, at: 1)
        #expect(Opq_V1_SubmitAccepted(receipt).operationIDs == receipt.operations)
        scheduler.workerJoined("w1", slots: 4, queues: ["net"], labels: ["net": "yes"], at: 2)
        let effects = scheduler.takeEffects()

        var dispatched = 0
        for effect in effects {
            switch effect {
            case let .dispatch(id, attempt, worker, _):
                let snapshot = try #require(scheduler.operation(id))
                let order = Opq_V1_Order.dispatch(Opq_V1_Dispatch(snapshot, attempt: attempt, killGrace: 10))
                let dispatch = try roundTrip(Opq_V1_CoordinatorToWorker.orders([order])).message.orders.items[0].dispatch
                #expect(dispatch.operation == id.rawValue && Int(dispatch.attempt) == attempt && worker == "w1")
                #expect(Work(dispatch.work) == snapshot.work)
                #expect(dispatch.timeoutSeconds == 12.5 && dispatch.qos == .userInteractive && dispatch.name == "fetch")
                dispatched += 1
            case .notify(let event):
                let wire = Opq_V1_OperationEvent(event)
                #expect(wire.operationID == event.operation && wire.jobID == event.job)
                #expect(wire.coreState == event.state && wire.outcome.core == event.outcome && wire.reason.core == event.reason)
                #expect(wire.workerID == event.worker && Int(wire.attempt) == event.attempt && wire.time == event.time)
            default:
                break
            }
        }
        #expect(dispatched == 1)

        let info = Opq_V1_OperationInfo(try #require(scheduler.operation(receipt.operations[1])))
        #expect(info.name == "build" && info.queuePriority == .low && info.requires == .success)
        #expect(info.dependencies == [receipt.operations[0].rawValue])
        #expect(info.coreWork == ConversionSamples.submission.operations[1].work)
        let queue = Opq_V1_QueueInfo(try #require(scheduler.queue("cpu")))
        #expect(queue.maxConcurrent == 4 && queue.operationCount == scheduler.queue("cpu")!.operationCount)
        let job = Opq_V1_JobInfo(try #require(scheduler.job(receipt.job)))
        #expect(job.operations == receipt.operations.map(\.rawValue) && job.counts.core == scheduler.job(receipt.job)!.counts)
        let worker = Opq_V1_WorkerInfo(try #require(scheduler.workerSnapshots.first))
        #expect(worker.name == "w1" && worker.queueSet == ["net"] && worker.operations.count == 1)
    }
}
