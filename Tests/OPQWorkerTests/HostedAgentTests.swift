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

/// A worker served by another loop's thread (``Worker/hosted()``, what the coordinator's loop does for the
/// workers of a one-process cluster): the host polls the worker's items with its own and gives it a turn
/// after each wait; the worker never runs a loop or a socket thread of its own.
@Suite("Hosted worker: served by another loop's thread", .serialized)
struct HostedAgentTests {
    @Test("a hosted worker registers, runs dispatched work and reports it, all on the host's thread")
    func runsWorkServedByTheHost() throws {
        let (coordinator, _, host) = try Self.hostedWorker { $0.register("thread") { ThreadHandler(context: $0) } }
        defer { host.end(); coordinator.close() }
        try #require(try connect(coordinator) != nil)

        try coordinator.dispatch(3, .command(.shell("echo hi")))
        // A handler that runs where it is started: on the thread that received the dispatch.
        try coordinator.dispatch(4, .handler(name: "thread", payload: []))
        let collected = try coordinator.reports { $0.finished(3) != nil && $0.finished(4) != nil }
        #expect(collected.map(\.report).finished(3)?.status == .succeeded)
        #expect(Self.text(of: 3, in: collected, \.stdout) == "hi\n")
        #expect(collected.map(\.report).finished(4)?.status == .succeeded)
        #expect(Self.text(of: 4, in: collected, \.result) == "\(host.threadID)",
                "the dispatch was received on another thread than the host's")
        #expect(host.isServing, "the worker ended")
    }

    @Test("a stop lets the running command finish and report, then the worker says goodbye and ends its guest")
    func aStopDrainsThenEndsTheGuest() throws {
        let (coordinator, worker, host) = try Self.hostedWorker()
        defer { host.end(); coordinator.close() }
        try #require(try connect(coordinator) != nil)

        try coordinator.dispatch(4, .command(.shell("sleep 0.3; echo done")))
        try #require(coordinator.reports { $0.started(4) }.map(\.report).started(4))
        worker.stop(reason: "test")
        let (reports, goodbye) = try reportsUntilGoodbye(coordinator)
        #expect(reports.finished(4)?.status == .succeeded)
        #expect(goodbye != nil)
        #expect(goodbye?.handedBack.isEmpty == true)
        #expect(try worker.waitUntilStopped(timeout: 10))
        #expect(host.waitUntilGuestEnded(timeout: 10), "the guest's turn never said it had ended")
    }

    @Test("a hosted worker that loses its coordinator reconnects with a new socket in the host's poller, and works on")
    func aLostCoordinatorIsFoundAgainThroughTheHostsPoller() throws {
        let (coordinator, _, host) = try Self.hostedWorker()
        defer { host.end(); coordinator.close() }
        let first = try #require(try coordinator.register())
        try coordinator.welcome(first.identity, interval: 0.1, liveness: 3)

        // Silent past liveness × interval: the worker drops its socket and connects again with a new one
        // (a new routing id), which the host must now poll in place of the old.
        coordinator.isSilent = true
        let again = try #require(try coordinator.register(timeout: 5))
        #expect(again.identity != first.identity, "the worker registered again over the same connection")
        coordinator.isSilent = false
        try coordinator.welcome(again.identity, interval: 0.1, liveness: 3)
        try coordinator.dispatch(6, .command(.shell("echo again")))
        let collected = try coordinator.reports { $0.finished(6) != nil }
        #expect(collected.map(\.report).finished(6)?.status == .succeeded)
        #expect(Self.text(of: 6, in: collected, \.stdout) == "again\n")
        #expect(host.isServing)
    }

    @Test("when the host's loop ends first, the worker kills its running command and ends")
    func theHostEndingFirstEndsTheWorker() async throws {
        let (coordinator, worker, host) = try Self.hostedWorker()
        defer { host.end(); coordinator.close() }
        try #require(try connect(coordinator) != nil)

        // The command says its pid through a FIFO: the test wakes when it is written.
        let announced = try FIFO(in: coordinator.directory)
        try coordinator.dispatch(5, .command(.shell("echo $$ > \(announced.path); exec sleep 60")))
        try #require(coordinator.reports { $0.started(5) }.map(\.report).started(5))
        let pid = try #require(await announced.line(timeout: 10).flatMap { pid_t($0) })
        host.end()
        #expect(try worker.waitUntilStopped(timeout: 10), "the worker did not end with its host")
        // Killed and reaped by the worker as it ended (not left running for the lease watchdog).
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "the command \(pid) still runs")
    }

    /// A fake coordinator, and a worker of it (test-sized timings, `prepare`d before it is hosted) served by
    /// a ``HostLoop`` of its own. The caller ends the host, then closes the coordinator.
    private static func hostedWorker(_ prepare: (Worker) -> Void = { _ in }) throws -> (FakeCoordinator, Worker, HostLoop) {
        let coordinator = try FakeCoordinator()
        let configuration = WorkerConfiguration(
            coordinator: coordinator.endpoint, name: "hosted-\(UUID().uuidString.prefix(8))", slots: 2, killGracePeriod: 1,
            heartbeatInterval: 0.25, liveness: 4, initialReconnectDelay: 0.05, maximumReconnectDelay: 0.2)
        do {
            let worker = try Worker(configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            prepare(worker)
            return (coordinator, worker, HostLoop(try worker.hosted()))
        } catch {
            coordinator.close()
            throw error
        }
    }

    /// The bytes of one raw-frame field (`\.stdout`, `\.result`) of `operation`'s `Finished` among `collected`,
    /// as text; nil without one.
    private static func text(of operation: UInt64, in collected: [(report: Opq_V1_Report, raw: [[UInt8]])],
                             _ field: KeyPath<Opq_V1_Finished, Opq_V1_OutputTail>) -> String? {
        guard let (report, raw) = collected.first(where: { $0.report.finishedReport?.operation == operation }),
              let finished = report.finishedReport else { return nil }
        return String(decoding: finished[keyPath: field].bytes(in: raw), as: UTF8.self)
    }
}

/// A loop standing in for the coordinator's: on a thread of its own, polls one guest's items (and nothing
/// else), asks it how long to wait and gives it a turn after each wait, until the guest ends or ``end()``
/// is called (then the guest is told: ``PollGuest/hostEnded()``).
private final class HostLoop: @unchecked Sendable {
    private let lock = NSLock()
    private var stopping = false
    private var guestEnded = false
    /// The host's thread.
    private var hostThread: pthread_t = 0
    private let exited = DispatchSemaphore(value: 0)
    private let started = DispatchSemaphore(value: 0)

    init(_ guest: any PollGuest) {
        let box = GuestBox(guest)
        let thread = Thread { [self] in
            lock.withLock { hostThread = pthread_self() }
            started.signal()
            var poller = Poller()
            box.guest.attach(to: &poller)
            while true {
                if lock.withLock({ stopping }) {
                    box.guest.hostEnded()
                    break
                }
                // Bounded, so an `end()` is seen within 20 ms.
                let timeout = min(20, box.guest.prepareWait(&poller))
                do { try poller.poll(timeout: timeout) } catch { break }
                if !box.guest.turn(&poller) {
                    lock.withLock { guestEnded = true }
                    break
                }
            }
            exited.signal()
        }
        thread.name = "opq-test-host"
        thread.start()
        started.wait()
    }

    /// The host's thread.
    var threadID: pthread_t { lock.withLock { hostThread } }

    /// Whether the host still serves its guest.
    var isServing: Bool { lock.withLock { !stopping && !guestEnded } }

    /// Whether the host's loop ended within `timeout` seconds because its guest said it had ended.
    func waitUntilGuestEnded(timeout: Double) -> Bool {
        guard exited.wait(timeout: .now() + timeout) == .success else { return false }
        exited.signal()  // later callers see it too
        return lock.withLock { guestEnded }
    }

    /// Ends the loop (the guest is told) and waits for its thread; safe to call more than once.
    func end() {
        lock.withLock { stopping = true }
        _ = exited.wait(timeout: .now() + 15)
        exited.signal()
    }
}

/// Carries a guest to the host's thread (it is used only there afterwards).
private final class GuestBox: @unchecked Sendable {
    let guest: any PollGuest
    init(_ guest: any PollGuest) { self.guest = guest }
}

/// Answers with the thread it runs on (`pthread_self`), where it is started (not on a thread of its own).
final class ThreadHandler: HandlerOperation, @unchecked Sendable {
    override var executesOnOwnThread: Bool { false }
    override func execute() throws { result = Array("\(pthread_self())".utf8) }
}
