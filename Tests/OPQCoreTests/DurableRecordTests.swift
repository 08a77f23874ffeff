import OPQCore
import Testing

/// The core is the only author of durable records (issue 12): what workers caused is a record of its
/// own, emitted where it happens, and a cancel returns what it cancelled.
@Suite struct DurableRecordTests {
    static func records(_ effects: [Effect]) -> [String] {
        effects.compactMap { effect in
            guard case .journal(let record) = effect else { return nil }
            switch record {
            case let .attempt(id, attempt, worker): return "attempt \(id)#\(attempt)@\(worker)"
            case let .retry(id, reason): return "retry \(id) \(reason)"
            case .requeue(let id): return "requeue \(id)"
            case let .finished(id, outcome, reason, report): return "finished \(id) \(outcome) \(reason)" + (report.map { " exit \($0.exitCode ?? -1)" } ?? "")
            case .submitted(let receipt, _): return "submitted \(receipt.job)"
            case .cancelled(let ids): return "cancelled \(ids)"
            default: return "\(record)"
            }
        }
    }

    @Test func attemptsRetriesAndFinishesAreRecordsOfTheirOwn() throws {
        var core = Scheduler()
        let receipt = try core.submit(Submission([OperationSpec(name: "a", work: .command(Command(["false"])), retries: 1)]), at: 0)
        let a = receipt.operations[0]
        core.workerJoined("w1", slots: 1, at: 0)
        #expect(Self.records(core.takeEffects()) == ["submitted job-1", "attempt \(a)#1@w1"])
        core.started(a, attempt: 1, worker: "w1", at: 1)
        core.finished(a, attempt: 1, worker: "w1", .exited(1), at: 2)
        #expect(Self.records(core.takeEffects()) == ["retry \(a) exit status"])
        core.heartbeat(from: "w1", at: 3.5)
        core.tick(at: 3.5)  // the retry's backoff (1 s) is over
        #expect(Self.records(core.takeEffects()) == ["attempt \(a)#2@w1"])
        core.finished(a, attempt: 2, worker: "w1", .exited(0), at: 4)
        #expect(Self.records(core.takeEffects()) == ["finished \(a) succeeded completed exit 0"])
    }

    @Test func aDispatchCarriesWhatTheWorkerIsSent() throws {
        var core = Scheduler()
        let work = Work.command(Command(["echo", "hi"]))
        let spec = OperationSpec(name: "a", queue: "net", work: work, qualityOfService: .utility, timeout: 12.5)
        let receipt = try core.submit(Submission([spec]), at: 0)
        let a = receipt.operations[0]
        core.workerJoined("w1", slots: 1, at: 0)
        let dispatches = core.takeEffects().compactMap { effect -> Scheduler.DispatchDetails? in
            guard case let .dispatch(id, attempt, worker, details) = effect, id == a, attempt == 1, worker == "w1" else { return nil }
            return details
        }
        let details = try #require(dispatches.first)
        #expect(dispatches.count == 1)
        #expect(details.name == "a" && details.queue == "net" && details.job == receipt.job && details.work == work)
        #expect(details.timeout == 12.5 && details.qualityOfService == .utility)
    }

    @Test func anAttemptGivenBackByAWorkerThatLeftIsARequeue() throws {
        var core = Scheduler()
        let a = try core.submit(Submission([OperationSpec(name: "a", work: .command(Command(["true"])))]), at: 0).operations[0]
        core.workerJoined("w1", slots: 1, at: 0)
        _ = core.takeEffects()
        core.workerLeft("w1", at: 1)
        #expect(Self.records(core.takeEffects()) == ["requeue \(a)"])
    }

    @Test func aCancelReturnsWhatItCancelled() throws {
        var core = Scheduler()
        let receipt = try core.submit(Submission([
            OperationSpec(name: "a", work: .command(Command(["true"]))),
            OperationSpec(name: "b", work: .command(Command(["true"]))),
            OperationSpec(name: "c", work: .command(Command(["true"]))),
        ]), at: 0)
        core.workerJoined("w1", slots: 1, at: 0)
        core.finished(receipt.operations[0], attempt: 1, worker: "w1", .succeeded, at: 1)
        #expect(try core.cancel(job: receipt.job, at: 2) == Array(receipt.operations[1...]), "the finished one is not part of it")
        // b was dispatched: it stays unfinished until its worker reports, so a cancel-all covers it again.
        #expect(try core.cancelAll(inQueue: "default", at: 3) == [receipt.operations[1]])
        #expect(try core.cancel(receipt.operations[0], at: 4) == [receipt.operations[0]])
    }
}
