import Foundation
import Logging
import OPQCore
import OPQWire
import Testing
import ZeroMQ
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#endif

/// A worker hosted by its coordinator's loop over a direct link (``Worker/hosted(directLinks:)``, what
/// `opq-coordinator --local-workers` does): no socket between them, the messages are frames in memory
/// that the host reads in its own turn. Here a ``DirectLinkHost`` plays the coordinator's loop on a
/// thread of its own, as the real one does: it serves the worker's turns and reads and answers its link.
@Suite("Hosted worker over a direct link", .serialized)
struct DirectLinkHostedAgentTests {
    @Test("registers over a link, runs a command and a handler, and reports them, all on the host's thread")
    func runsWorkOverALink() throws {
        struct Seen: Sendable {
            var linkIdentities: [[UInt8]]
            var registered: [UInt8]?
            var status: [UInt64: Opq_V1_AttemptStatus] = [:]
            var stdout = ""
            var handlerThread = ""
            var hostThread = ""
            var waitWithADispatchOnTheLink = -1
            var waitWithNothingOnTheLink = -1
        }
        let seen = try onOwnThread { () throws -> Seen in
            let host = try DirectLinkHost { $0.register("thread") { ThreadHandler(context: $0) } }
            defer { host.end() }
            let register = try host.next { $0.register != nil }
            var seen = Seen(linkIdentities: host.openIdentities, registered: register?.identity)
            guard let register else { return seen }
            host.welcome(register.identity)
            _ = try host.next(timeout: 0.3) { _ in false }  // the Welcome is read; nothing waits on the link
            seen.waitWithNothingOnTheLink = host.nextWait()
            host.dispatch(3, .command(.shell("echo hi")))
            // Nothing wakes a poll for a link: the worker must ask its host not to wait while one holds a
            // message for it, or the dispatch would sit there until the worker's next timer.
            seen.waitWithADispatchOnTheLink = host.nextWait()
            host.dispatch(4, .handler(name: "thread", payload: []))
            let collected = try host.reports { $0.finished(3) != nil && $0.finished(4) != nil }
            for (report, raw) in collected {
                guard let finished = report.finishedReport else { continue }
                seen.status[finished.operation] = finished.status
                if finished.operation == 3 { seen.stdout = String(decoding: finished.stdout.bytes(in: raw), as: UTF8.self) }
                if finished.operation == 4 { seen.handlerThread = String(decoding: finished.result.bytes(in: raw), as: UTF8.self) }
            }
            seen.hostThread = "\(pthread_self())"
            return seen
        }
        #expect(seen.waitWithADispatchOnTheLink == 0, "the worker would let its host sleep with a message on its link")
        #expect(seen.waitWithNothingOnTheLink > 0, "the worker asks not to wait even with nothing to do")
        #expect(seen.linkIdentities.count == 1, "the worker did not connect over exactly one link")
        #expect(seen.registered == seen.linkIdentities.first, "the Register did not come over the worker's link")
        #expect(seen.status[3] == .succeeded)
        #expect(seen.stdout == "hi\n")
        #expect(seen.status[4] == .succeeded)
        #expect(seen.handlerThread == seen.hostThread, "the dispatch was received on another thread than the host's")
    }

    @Test("a worker that loses its coordinator closes its link and registers over a new one; the old one is unreachable")
    func aLostCoordinatorIsFoundAgainOverANewLink() throws {
        struct Seen: Sendable {
            var first: [UInt8]?
            var again: [UInt8]?
            var toTheOldLink: DirectLinks.Delivery?
            var openAfter: [[UInt8]] = []
            var status: Opq_V1_AttemptStatus?
            var stdout = ""
        }
        let seen = try onOwnThread { () throws -> Seen in
            let host = try DirectLinkHost()
            defer { host.end() }
            var seen = Seen()
            guard let first = try host.next(where: { $0.register != nil }) else { return seen }
            seen.first = first.identity
            host.welcome(first.identity, interval: 0.1, liveness: 3)
            // Silent past liveness × interval: the worker gives the coordinator up and connects again.
            host.isSilent = true
            guard let again = try host.next(where: { $0.register != nil && $0.identity != first.identity }) else { return seen }
            host.isSilent = false
            seen.again = again.identity
            seen.toTheOldLink = host.links.deliver([first.identity, [0]])
            seen.openAfter = host.openIdentities
            host.welcome(again.identity, interval: 0.1, liveness: 3)
            host.dispatch(6, .command(.shell("echo again")))
            let collected = try host.reports { $0.finished(6) != nil }
            if let (report, raw) = collected.first(where: { $0.report.finishedReport != nil }), let finished = report.finishedReport {
                seen.status = finished.status
                seen.stdout = String(decoding: finished.stdout.bytes(in: raw), as: UTF8.self)
            }
            return seen
        }
        let first = try #require(seen.first, "no Register")
        let again = try #require(seen.again, "the silent coordinator was never given up")
        #expect(first != again)
        #expect(seen.toTheOldLink == .notALink || seen.toTheOldLink == .unreachable, "\(String(describing: seen.toTheOldLink))")
        #expect(seen.openAfter == [again], "the old link is still open beside the new one")
        #expect(seen.status == .succeeded)
        #expect(seen.stdout == "again\n")
    }

    @Test("a stop lets the command finish, says goodbye over the link, closes it and ends the guest")
    func aStopSaysGoodbyeAndClosesTheLink() throws {
        struct Seen: Sendable {
            var status: Opq_V1_AttemptStatus?
            var goodbye = false
            var guestEnded = false
            var linksLeft = -1
        }
        let seen = try onOwnThread { () throws -> Seen in
            let host = try DirectLinkHost()
            defer { host.end() }
            var seen = Seen()
            guard let register = try host.next(where: { $0.register != nil }) else { return seen }
            host.welcome(register.identity)
            host.dispatch(4, .command(.shell("sleep 0.3; echo done")))
            guard try host.reports(until: { $0.started(4) }).map(\.report).started(4) else { return seen }
            host.worker.stop(reason: "test")
            let goodbye = try host.next(where: { received in
                if let finished = received.reports.finished(4) { seen.status = finished.status }
                return received.goodbye != nil
            })
            seen.goodbye = goodbye != nil
            // The Goodbye was the link's last message: it is gone once the guest has ended.
            _ = try host.next(timeout: 5) { _ in false }
            seen.guestEnded = host.guestEnded
            seen.linksLeft = host.openIdentities.count
            return seen
        }
        #expect(seen.status == .succeeded)
        #expect(seen.goodbye)
        #expect(seen.guestEnded, "the guest's turn never said it had ended")
        #expect(seen.linksLeft == 0)
    }
}

/// A coordinator's loop in miniature over a direct link: hosts one worker (test-sized timings) on the
/// thread that makes it and plays the coordinator's side of the protocol when asked — reads the link,
/// answers with the latest lease request echoed, sends heartbeats while waiting unless ``isSilent``.
/// Every call must come from that one thread (``onOwnThread(_:)``).
private final class DirectLinkHost: WorkerMessages {
    let links = DirectLinks()
    let worker: Worker
    private let guest: any PollGuest
    private var poller = Poller()
    /// The guest said it had ended (its turn returned false).
    private(set) var guestEnded = false
    /// While true, nothing is sent unasked.
    var isSilent = false
    private var welcomed: [UInt8]?
    private var interval = 0.2
    private var lastSent = 0.0
    private var leaseRequests: [[UInt8]: UInt64] = [:]

    init(_ prepare: (Worker) -> Void = { _ in }) throws {
        let configuration = WorkerConfiguration(
            coordinator: "inproc://opq-direct-link-test", name: "linked-\(UUID().uuidString.prefix(8))", slots: 2,
            killGracePeriod: 1, heartbeatInterval: 0.25, liveness: 4, initialReconnectDelay: 0.05, maximumReconnectDelay: 0.2)
        worker = try Worker(configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        prepare(worker)
        guest = try worker.hosted(directLinks: links)
        guest.attach(to: &poller)
    }

    /// The routing ids of the worker's links that are open.
    var openIdentities: [[UInt8]] { knownIdentities.filter(links.isOpen) }
    /// Every routing id a message came from.
    private var knownIdentities: [[UInt8]] = []

    /// Serves the worker until it sends a message for which `predicate` holds (returned, skipping others),
    /// or `timeout` seconds pass (nil).
    func next(timeout: Double = 5, where predicate: (FakeCoordinator.Received) -> Bool) throws -> FakeCoordinator.Received? {
        let deadline = MonotonicClock.now() + timeout
        while true {
            while let frames = links.receive() {
                let (identity, message, raw) = try Frames.decodeRouted(frames, as: Opq_V1_WorkerMessage.self)
                if !knownIdentities.contains(identity) { knownIdentities.append(identity) }
                leaseRequests[identity] = max(leaseRequests[identity] ?? 0, message.leaseRequest)
                let received = FakeCoordinator.Received(identity: identity, message: message, raw: raw)
                if predicate(received) { return received }
            }
            let now = MonotonicClock.now()
            if now >= deadline || guestEnded { return nil }
            if !isSilent, welcomed != nil, now - lastSent >= interval { send(.heartbeat) }
            var timeout = min(guest.prepareWait(&poller), 20, max(0, Int(((deadline - now) * 1000).rounded(.up))))
            if links.pendingForCoordinator > 0 { timeout = 0 }
            try poller.poll(timeout: timeout)
            if !guest.turn(&poller) { guestEnded = true }
        }
    }

    /// How long the worker lets its host wait now, in milliseconds (``PollGuest/prepareWait(_:)``).
    func nextWait() -> Int { guest.prepareWait(&poller) }

    /// Answers a `Register` from `identity`.
    func welcome(_ identity: [UInt8], interval: Double = 0.2, liveness: UInt32 = 5) {
        welcomed = identity
        self.interval = interval
        send(FakeCoordinator.welcomeMessage(interval: interval, liveness: liveness))
    }

    /// Orders the welcomed worker to run `work` as attempt 1 of `operation`.
    func dispatch(_ operation: UInt64, _ work: Work) {
        send(FakeCoordinator.dispatchMessage(operation, work))
    }

    /// Sends `message` to the welcomed worker over its link, echoing its latest lease request.
    @discardableResult
    func send(_ message: Opq_V1_CoordinatorToWorker) -> DirectLinks.Delivery {
        guard let welcomed, let frames = try? Frames.encode(message.echoing(leaseRequests[welcomed] ?? 0), to: welcomed) else { return .notALink }
        lastSent = MonotonicClock.now()
        return links.deliver(frames)
    }

    /// Ends the host's loop: a guest still served is told (it stops and reaps its commands).
    func end() {
        guard !guestEnded else { return }
        guest.hostEnded()
        guestEnded = true
    }
}

private extension Opq_V1_CoordinatorToWorker {
    func echoing(_ leaseRequest: UInt64) -> Self {
        var message = self
        message.leaseEcho = leaseRequest
        return message
    }
}

/// Runs `body` on a thread of its own (as the coordinator's loop runs on its own), waits for it (at most
/// 60 s) and returns what it returned or throws what it threw. The worker it hosts takes that thread as
/// its own (commands are spawned from it), so no test-pool thread is marked so.
private func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        box.set(Result { try body() })
        done.signal()
    }
    thread.name = "opq-test-direct-host"
    thread.start()
    guard done.wait(timeout: .now() + 60) == .success else { throw HostTimedOut() }
    return try box.get()
}

private struct HostTimedOut: Error, CustomStringConvertible {
    var description: String { "the host's thread did not finish within 60 s" }
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<T, any Error>?
    func set(_ result: Result<T, any Error>) { lock.withLock { self.result = result } }
    func get() throws -> T { try lock.withLock { result }!.get() }
}
