import Foundation
import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// `CoordinatorClient` (what the `opq` CLI is built on) against a scripted coordinator: a wait is one
/// request answered when the coordinator answers, an interruption ends it at once, and a watch hands
/// out typed snapshots and events, starting again after a gap — nothing polls in slices.
@Suite(.serialized) struct CoordinatorClientTests {
    /// Reading a watch before starting one is a misuse that throws a clear error (it was a precondition
    /// crash of the whole program), sends nothing, and leaves the client usable.
    @Test func nextWatchUpdateBeforeWatchThrowsInsteadOfCrashing() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        let client = try CoordinatorClient(endpoint: scripted.endpoint)
        #expect {
            _ = try client.nextWatchUpdate(until: ContinuousClock.now + .seconds(5))
        } throws: { error in
            guard case .notWatching? = error as? ClientError else { return false }
            return "\(error)".contains("before watch(_:)")
        }
        #expect(try receive(scripted.router, within: 0.5) == nil, "nothing was sent")
    }

    @Test func aWaitIsOneRequestThatReturnsWhenTheCoordinatorAnswers() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        let client = Shared(try CoordinatorClient(endpoint: scripted.endpoint))
        let outcome = Shared<WaitOutcome?>(nil)
        let progress = Counter()
        Thread {
            outcome.value = try? client.value.wait(for: .job(JobID(3)), timeout: nil)
            progress.bump("returned")
        }.start()
        let (identity, wait) = try #require(try receive(scripted.router, within: 20))
        // No timeout given: the request asks the coordinator to hold it for one slice (30 s).
        #expect(wait.wait.job == 3 && wait.wait.hasTimeoutSeconds && wait.wait.timeoutSeconds == 30)
        // The coordinator takes its time: meanwhile the client asks nothing more (no polling slices).
        #expect(try receive(scripted.router, within: 1.5) == nil, "a request while the wait was pending")
        #expect(progress["returned"] == 0)
        try send(scripted.router, identity, .reply(wait.requestID) { $0.waited.job = .with { $0.id = 3; $0.finished = true } })
        #expect(progress.wait(within: 20) { $0["returned", default: 0] == 1 })
        #expect(outcome.value == .finished)
    }

    /// A coordinator that restarted forgot the Wait it held: the client asks again when the slice it asked
    /// for is over and 10 s more passed without an answer, so `opq wait` outlives a restart.
    @Test func aWaitThatTheCoordinatorForgotIsAskedAgainAfterItsSlice() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        let client = Shared(try CoordinatorClient(endpoint: scripted.endpoint))
        client.value.waitSliceSeconds = 0.5
        let outcome = Shared<WaitOutcome?>(nil)
        let progress = Counter()
        Thread {
            outcome.value = try? client.value.wait(for: .job(JobID(4)), timeout: nil)
            progress.bump("returned")
        }.start()
        let (_, first) = try #require(try receive(scripted.router, within: 20))
        #expect(first.wait.job == 4 && first.wait.timeoutSeconds == 0.5)
        // Not answered (the coordinator that got it is gone): the same wait comes again.
        let (identity, second) = try #require(try receive(scripted.router, within: 30), "the wait was not asked again")
        #expect(second.wait.job == 4 && second.requestID != first.requestID)
        #expect(progress["returned"] == 0)
        try send(scripted.router, identity, .reply(second.requestID) { $0.waited.job = .with { $0.id = 4; $0.finished = true } })
        #expect(progress.wait(within: 20) { $0["returned", default: 0] == 1 })
        #expect(outcome.value == .finished)
    }

    /// A ping that reached a coordinator just before it died is lost with its connection: the client asks
    /// again, and the coordinator started anew on the endpoint answers within the ping's timeout (CI saw
    /// `opq wait` give up after its 5 s probe when the coordinator restarted during it).
    @Test func aPingLostWithADyingCoordinatorIsAskedAgainAndAnsweredByTheNextOne() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        let client = Shared(try CoordinatorClient(endpoint: scripted.endpoint))
        let failure = Shared<String?>(nil)
        let progress = Counter()
        Thread {
            do { try client.value.ping(timeout: 20) } catch { failure.value = "\(error)" }
            progress.bump("returned")
        }.start()
        _ = try #require(try receive(scripted.router, within: 20), "no ping came")
        // The coordinator dies without answering; another binds the same endpoint.
        scripted.router.close()
        let context = try Context()
        defer { context.close() }
        let router = try context.socket(.router)
        defer { router.close() }
        try router.set(.linger, 0)
        _ = try router.bind(scripted.endpoint)
        let (identity, again) = try #require(try receive(router, within: 20), "the ping was not asked again")
        #expect(again.listQueues == Opq_V1_ListQueues())
        #expect(progress["returned"] == 0)
        try send(router, identity, .reply(again.requestID) { $0.queues = Opq_V1_QueueList() })
        #expect(progress.wait(within: 20) { $0["returned", default: 0] == 1 })
        #expect(failure.value == nil)
    }

    @Test func anInterruptionEndsAWaitAtOnceAndAFalseAlarmLetsItGoOn() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let stop = Shared(false)
        let progress = Counter()
        let interruption = Interruption(fileDescriptor: ends[0]) {
            var byte: UInt8 = 0
            _ = read(ends[0], &byte, 1)
            progress.bump("asked")
            return stop.value
        }
        let client = Shared(try CoordinatorClient(endpoint: scripted.endpoint))
        let outcome = Shared<WaitOutcome?>(nil)
        let shared = Shared(interruption)
        Thread {
            outcome.value = try? client.value.wait(for: .operation(OperationID(9)), timeout: 600, interruption: shared.value)
            progress.bump("returned")
        }.start()
        let (_, wait) = try #require(try receive(scripted.router, within: 20))
        #expect(wait.wait.operation == 9 && wait.wait.timeoutSeconds == 30, "600 s are asked for a slice at a time")

        var byte: UInt8 = 1
        #expect(write(ends[1], &byte, 1) == 1)  // a false alarm (say SIGCHLD of an unrelated child)
        #expect(progress.wait(within: 20) { $0["asked", default: 0] == 1 })
        #expect(progress["returned"] == 0, "the wait goes on after a false alarm")
        stop.value = true
        #expect(write(ends[1], &byte, 1) == 1)
        #expect(progress.wait(within: 20) { $0["returned", default: 0] == 1 })
        #expect(outcome.value == .interrupted)
        #expect(try receive(scripted.router, within: 0.5) == nil, "the wait was one request")
    }

    @Test func aWatchGivesTypedSnapshotsAndEventsAndStartsAgainAfterAGap() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        let client = Shared(try CoordinatorClient(endpoint: scripted.endpoint))
        let updates = Shared<[WatchUpdate]>([])
        let progress = Counter()
        Thread {
            do {
                try client.value.watch(.job(JobID(2)), eventDelay: 0.005)
                for _ in 0..<3 {
                    let update = try client.value.nextWatchUpdate(until: ContinuousClock.now + .seconds(30))
                    updates.value.append(update)
                    progress.bump("update")
                }
            } catch {
                progress.bump("failed")
            }
        }.start()
        let (identity, first) = try #require(try receive(scripted.router, within: 20))
        #expect(first.watch.job == 2 && first.watch.eventDelaySeconds == 0.005)
        try send(scripted.router, identity, .reply(first.requestID) { $0.watching.resumed = false })
        try send(scripted.router, identity, .with {
            $0.snapshot.watch = first.requestID
            $0.snapshot.sequence = 5
            $0.snapshot.operations = [.with { $0.id = 7; $0.job = 2; $0.name = "compile"; $0.state = .executing; $0.worker = "w1" }]
            $0.snapshot.jobs = [.with { $0.id = 2 }]
        })
        try send(scripted.router, identity, .with {
            $0.events.watch = first.requestID
            $0.events.previous = 5
            $0.events.items = [.with {
                $0.sequence = 6
                $0.operation = .with { $0.operation = 7; $0.job = 2; $0.state = .finished; $0.outcome = .failed; $0.reason = .exitStatus; $0.exitCode = 2 }
            }]
        })
        // Events 7 and 8 are lost: the client ends the old watch and starts a new one, from a snapshot.
        try send(scripted.router, identity, .with {
            $0.events.watch = first.requestID
            $0.events.previous = 8
            $0.events.items = [.with { $0.sequence = 9; $0.jobFinished = 2 }]
        })
        let (_, unwatch) = try #require(try receive(scripted.router, within: 20))
        #expect(unwatch.unwatch.watch == first.requestID)
        try send(scripted.router, identity, .reply(unwatch.requestID) { $0.done = Opq_V1_Done() })
        let (_, second) = try #require(try receive(scripted.router, within: 20))
        #expect(second.watch.job == 2 && second.watch.eventDelaySeconds == 0.005, "started again with the same delay")
        try send(scripted.router, identity, .reply(second.requestID) { $0.watching.resumed = false })
        try send(scripted.router, identity, .with {
            $0.snapshot.watch = second.requestID
            $0.snapshot.sequence = 9
            $0.snapshot.jobs = [.with { $0.id = 2; $0.finished = true }]
        })
        #expect(progress.wait(within: 20) { $0["update", default: 0] == 3 || $0["failed", default: 0] > 0 })
        #expect(progress["failed"] == 0)
        let got = updates.value
        guard got.count == 3, case .snapshot(let start) = got[0], case .events(let events) = got[1], case .snapshot(let again) = got[2] else {
            Issue.record("unexpected updates: \(got)")
            return
        }
        #expect(start.isComplete && start.finishedJobs.isEmpty)
        #expect(start.operations.map(\.id) == [OperationID(7)] && start.operations.first?.state == .executing)
        #expect(start.operations.first?.worker == "w1" && start.operations.first?.label == "compile (op-7)")
        guard case .stateChanged(let change)? = events.first, events.count == 1 else {
            Issue.record("unexpected events: \(events)")
            return
        }
        #expect(change.operation == OperationID(7) && change.job == JobID(2) && change.state == .finished)
        #expect(change.outcome == .failed && change.reason == .exitStatus && change.exitCode == 2 && change.sequence == 6)
        #expect(again.finishedJobs == [JobID(2)])
    }

    @Test func aSilentWatchAsksAgainAndAfterARestartTakesTheNewCoordinatorsSnapshot() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        let client = Shared(try CoordinatorClient(endpoint: scripted.endpoint))
        client.value.watchCheckSeconds = 0.3
        let updates = Shared<[WatchUpdate]>([])
        let progress = Counter()
        Thread {
            do {
                try client.value.watch(.job(JobID(2)))
                for _ in 0..<2 {
                    updates.value.append(try client.value.nextWatchUpdate(until: nil))
                    progress.bump("update")
                }
            } catch {
                progress.bump("failed")
            }
        }.start()
        let (identity, first) = try #require(try receive(scripted.router, within: 20))
        #expect(!first.watch.hasResumeAfter && !first.watch.hasInstance)
        try send(scripted.router, identity, .reply(first.requestID) { $0.watching.instance = "A" })
        try send(scripted.router, identity, .with {
            $0.snapshot.watch = first.requestID
            $0.snapshot.sequence = 5
            $0.snapshot.jobs = [.with { $0.id = 2 }]
        })
        // Silence: the client asks for the watch again, resuming after what it saw, on instance A only.
        let (_, check) = try #require(try receive(scripted.router, within: 20), "the silent watch was not asked for again")
        #expect(check.watch.job == 2 && check.watch.resumeAfter == 5 && check.watch.instance == "A")
        // The coordinator restarted (instance B): not resumed, a fresh snapshot — the job finished meanwhile.
        try send(scripted.router, identity, .reply(check.requestID) { $0.watching.instance = "B" })
        let (_, unwatch) = try #require(try receive(scripted.router, within: 20))
        #expect(unwatch.unwatch.watch == first.requestID)
        try send(scripted.router, identity, .reply(unwatch.requestID) { $0.done = Opq_V1_Done() })
        try send(scripted.router, identity, .with {
            $0.snapshot.watch = check.requestID
            $0.snapshot.sequence = 1
            $0.snapshot.jobs = [.with { $0.id = 2; $0.finished = true }]
        })
        #expect(progress.wait(within: 20) { $0["update", default: 0] == 2 || $0["failed", default: 0] > 0 })
        #expect(progress["failed"] == 0)
        let got = updates.value
        guard got.count == 2, case .snapshot(let start) = got[0], case .snapshot(let again) = got[1] else {
            Issue.record("unexpected updates: \(got)")
            return
        }
        #expect(start.finishedJobs.isEmpty && again.finishedJobs == [JobID(2)])
    }

    /// `jobsAndQueues` (`opq status`): both requests go out before either is answered — one round trip —
    /// and each reply is matched to its request, also when they come in the other order; a second page
    /// of jobs is asked for after both.
    @Test func jobsAndQueuesAsksBothAtOnceAndMatchesRepliesInAnyOrder() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        let client = Shared(try CoordinatorClient(endpoint: scripted.endpoint))
        let listed = Shared<(jobs: [JobID], queues: [String])?>(nil)
        let progress = Counter()
        Thread {
            if let (jobs, queues) = try? client.value.jobsAndQueues(firstReplyTimeout: 20, timeout: 20) {
                listed.value = (jobs.map(\.id), queues.map(\.name))
            }
            progress.bump("returned")
        }.start()
        let (identity, jobs) = try #require(try receive(scripted.router, within: 20))
        let (_, queues) = try #require(try receive(scripted.router, within: 20), "the second request came only after a reply")
        guard case .listJobs(let list)? = jobs.body, case .listQueues? = queues.body else {
            Issue.record("expected ListJobs then ListQueues, got \(jobs) and \(queues)")
            return
        }
        #expect(list.after == 0)
        try send(scripted.router, identity, .reply(queues.requestID) { $0.queues.queues = [.with { $0.name = "default"; $0.maxConcurrent = -1 }] })
        try send(scripted.router, identity, .reply(jobs.requestID) { $0.jobs = .with { $0.jobs = [.with { $0.id = 1 }]; $0.more = true } })
        let (_, page) = try #require(try receive(scripted.router, within: 20))
        #expect(page.listJobs.after == 1)
        try send(scripted.router, identity, .reply(page.requestID) { $0.jobs.jobs = [.with { $0.id = 2; $0.finished = true }] })
        #expect(progress.wait(within: 20) { $0["returned", default: 0] == 1 })
        #expect(listed.value?.jobs == [JobID(1), JobID(2)])
        #expect(listed.value?.queues == ["default"])
    }

    private func send(_ router: Socket, _ identity: [UInt8], _ message: Opq_V1_CoordinatorToClient) throws {
        _ = try router.send(try Frames.encode(message, to: identity))
    }

    /// The next request the client sends within `seconds`; nil if none came.
    private func receive(_ router: Socket, within seconds: Double) throws -> (identity: [UInt8], request: Opq_V1_ClientRequest)? {
        var poller = Poller()
        try poller.add(router)
        guard try poller.poll(timeout: Int(seconds * 1000)) > 0, let frames = try router.receiveMultipart(flags: .dontWait) else { return nil }
        let (identity, request, _) = try Frames.decodeRouted(frames, as: Opq_V1_ClientRequest.self)
        return (identity, request)
    }
}

/// A value handed between the test's thread and the client's.
private final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
