import Foundation
import OPQCore
import Testing
@testable import OPQWorker

@Suite("Attempt runner")
struct AttemptRunnerTests {
    private func key(_ id: UInt64) -> AttemptKey { AttemptKey(OperationID(id), attempt: 1) }

    private func sleepRequest(_ seconds: String, id: UInt64) -> RunRequest {
        RunRequest(key(id), work: .handler(name: "sleep", payload: Array(seconds.utf8)))
    }

    private func index(_ log: EventLog, _ match: (AttemptEvent) -> Bool) -> Int? { log.all.firstIndex(where: match) }

    @Test("with 2 slots, the third attempt starts only after one finishes")
    func slotsLimitConcurrency() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 2, worker: "w1", events: log.sink)
        defer { runner.shutdown(handBack: true, timeout: 30) }
        for id in 1 ... 3 { runner.run(sleepRequest("1000", id: UInt64(id))) }
        #expect(await log.started(key(1)))
        #expect(await log.started(key(2)))
        #expect(!log.all.contains { if case .started(key(3), _) = $0 { true } else { false } })
        runner.cancel(OperationID(1), attempt: 1)
        #expect(await log.started(key(3)))
        let finished1 = try #require(index(log) { if case .finished(let c) = $0 { c.key == key(1) } else { false } })
        let started3 = try #require(index(log) { if case .started(key(3), _) = $0 { true } else { false } })
        #expect(finished1 < started3)
    }

    @Test("a command given a free slot is started by the thread that ran it: `started` is out when run returns")
    func commandStartsOnTheCallingThread() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        defer { runner.shutdown(handBack: true, timeout: 30) }
        #expect(runner.run(RunRequest(key(1), work: .command(Command(["true"])))) == .accepted)
        #expect(log.all.contains { if case .started(key(1), _) = $0 { true } else { false } })
        #expect(try #require(await log.completion(key(1))).report.status == .succeeded)
    }

    @Test("with 1 slot, commands beyond it wait and start in order as each one ends")
    func commandsWaitForTheSlot() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        defer { runner.shutdown(handBack: true, timeout: 30) }
        for id in 1 ... 4 { runner.run(RunRequest(key(UInt64(id)), work: .command(Command(["true"])))) }
        for id in 1 ... 4 { #expect(try #require(await log.completion(key(UInt64(id)))).report.status == .succeeded) }
        // One at a time: each attempt starts only after the one before it finished.
        for id in 2 ... 4 {
            let finished = try #require(index(log) { if case .finished(let c) = $0 { c.key == key(UInt64(id - 1)) } else { false } })
            let started = try #require(index(log) { if case .started(key(UInt64(id)), _) = $0 { true } else { false } })
            #expect(finished < started)
        }
    }

    @Test("held lists queued and running attempts; a duplicate run is ignored")
    func heldAndDuplicates() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        defer { runner.shutdown(handBack: true, timeout: 30) }
        runner.run(sleepRequest("1000", id: 2))
        runner.run(sleepRequest("1000", id: 1))
        #expect(runner.run(sleepRequest("1000", id: 2)) == .alreadyHeld)
        #expect(runner.held == [key(1), key(2)])
    }

    @Test("cancel of a queued attempt reports it at once, never started")
    func cancelQueued() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        defer { runner.shutdown(handBack: true, timeout: 30) }
        runner.run(sleepRequest("1000", id: 1))
        runner.run(sleepRequest("1000", id: 2))
        #expect(await log.started(key(1)))
        runner.cancel(OperationID(2), attempt: 1)
        let completion = try #require(await log.completion(key(2), timeout: 1))
        #expect(completion.report.status == .cancelled)
        #expect(completion.startedAt == nil)
        #expect(runner.held == [key(1)])
    }

    @Test("shutdown with hand back stops everything and marks it handed back")
    func shutdownHandBack() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(RunRequest(key(1), work: .command(Command(["sleep", "1000"])), killGracePeriod: 1))
        runner.run(sleepRequest("1000", id: 2))
        #expect(await log.started(key(1)))
        #expect(runner.shutdown(handBack: true, timeout: 30))
        for id in [UInt64(1), 2] {
            let completion = try #require(await log.completion(key(id), timeout: 1))
            #expect(completion.handedBack)
            #expect(completion.report.status == .cancelled)
        }
        #expect(runner.run(sleepRequest("1", id: 3)) == .shuttingDown)
        #expect(runner.held.isEmpty)
    }

    @Test("shutdown without hand back lets running attempts finish and hands back queued ones")
    func shutdownDrains() async throws {
        /// Runs until the test opens its gate. (Its own bound is far beyond the test's waits: a handler that
        /// gave up first, on a machine slow enough to delay the shutdown thread, freed the slot for the
        /// queued attempt, which then ran instead of being handed back.)
        final class Gated: HandlerOperation, @unchecked Sendable {
            static let gate = DispatchSemaphore(value: 0)
            override func execute() throws { _ = Gated.gate.wait(timeout: .now() + 300) }
        }
        let registry = HandlerRegistry.withBuiltins()
        registry.register("gated") { Gated(context: $0) }
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", handlers: registry, events: log.sink)
        runner.run(RunRequest(key(1), work: .handler(name: "gated", payload: [])))
        runner.run(sleepRequest("1000", id: 2))
        #expect(await log.started(key(1)))
        let shutdownDone = EventLog()
        Thread {
            let drained = runner.shutdown(handBack: false, timeout: 30)
            shutdownDone.sink(.progress(AttemptKey(OperationID(0), attempt: drained ? 1 : 0), fraction: 1, message: nil))
        }.start()
        let second = try #require(await log.completion(key(2), timeout: 30))
        #expect(second.handedBack && second.startedAt == nil)
        #expect(runner.held == [key(1)], "the running attempt is not stopped")
        Gated.gate.signal()
        let first = try #require(await log.completion(key(1), timeout: 30))
        #expect(first.report == .succeeded && !first.handedBack)
        #expect(await shutdownDone.wait { $0.first?.key.attempt == 1 }, "shutdown returned true")
        #expect(runner.shutdown(handBack: true, timeout: 1), "a second shutdown is harmless")
    }

    @Test("an empty operation succeeds")
    func empty() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 1, worker: "w1", events: log.sink)
        runner.run(RunRequest(key(1), work: .empty))
        #expect(try #require(await log.completion(key(1))).report == .succeeded)
    }

    @Test("events of an attempt come in order: started, then finished")
    func eventOrder() async throws {
        let log = EventLog()
        let runner = AttemptRunner(slots: 2, worker: "w1", events: log.sink)
        for id in 1 ... 20 { runner.run(RunRequest(key(UInt64(id)), work: id % 2 == 0 ? .handler(name: "noop", payload: []) : .command(Command(["true"])))) }
        #expect(await log.wait { $0.filter { if case .finished = $0 { true } else { false } }.count == 20 })
        for id in 1 ... 20 {
            let kinds = log.all.filter { $0.key == key(UInt64(id)) }.map { if case .started = $0 { "s" } else { "f" } }
            #expect(kinds == ["s", "f"])
        }
    }
}
