import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing

/// Cancel keeps its deadline when the machine is saturated (SEMANTICS §5, §7): twice as many CPU-bound
/// commands as cores run on the worker at the default QoS and a client keeps the coordinator busy with
/// submissions, while commands with a background grandchild are cancelled one after another.
///
/// Why a 1 s bound is meaningful and not flaky: it is the promise itself (cancel → whole group dead),
/// and every step of the path is a thread blocked in a system call that the event wakes (the
/// coordinator's poll, the worker's socket poll, `kill`, the reaper's `waitpid`, the drain's `poll`):
/// the kernel runs a woken thread within milliseconds even beside CPU-bound processes of the same
/// niceness. `opq-bench cancel` measured p99 ≈ 130 ms saturated, at a load average of 29 on 2 cores. A
/// path that waited for a busy thread pool or a polling interval shows up here as seconds.
@Suite(.serialized) struct CancelUnderLoadTests {
    static let rounds = 5

    @Test func cancelKillsTheWholeGroupWithinOneSecondOnASaturatedMachine() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let hogs = 2 * ProcessInfo.processInfo.activeProcessorCount
        // Short heartbeats, so "no worker is declared lost under load" is checked against a 1.5 s liveness.
        try cluster.startCoordinator(["--heartbeat", "0.5", "--liveness", "3"])
        try cluster.startWorker("w1", slots: hogs + 1, arguments: ["--heartbeat", "0.5"])
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let hogStream = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        try hogStream.request { $0.watch.queue = "hogs" }
        let targetStream = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        try targetStream.request { $0.watch.queue = "targets" }

        let hog = OperationSpec(queue: "hogs", work: .command(Command(["sha256sum", "/dev/zero"])))
        _ = try client.submit(Submission(Array(repeating: hog, count: hogs)))
        let busy = BusyClient(endpoint: cluster.clientsEndpoint)
        defer { busy.stop() }
        var lostWorkerSigns: [String] = []
        func watchHogs(until deadline: Date, stopWhen done: (Set<UInt64>) -> Bool = { _ in false }) throws -> Set<UInt64> {
            var executing = Set<UInt64>()
            while !done(executing), let events = try hogStream.operationEvents(until: deadline) {
                for event in events {
                    if event.state == .executing { executing.insert(event.operation) }
                    if event.reason == .lostWorker || event.attempt > 1 { lostWorkerSigns.append("\(event)") }
                }
            }
            return executing
        }
        let loadStarted = Date()
        let running = try watchHogs(until: Date().addingTimeInterval(30)) { $0.count == hogs }
        try #require(running.count == hogs, "only \(running.count) of \(hogs) CPU-bound commands started\n\(cluster.logs)")

        for round in 1...Self.rounds {
            let fifo = try Signal(cluster.path("grandchild-\(round)"))
            let script = "sleep 1000 & echo $! > \"$0\"; sleep 1000"
            let target = try client.submit(Submission([
                OperationSpec(queue: "targets", work: .command(Command(["/bin/sh", "-c", script, fifo.path]))),
            ])).operations[0]
            let line = try #require(fifo.wait(within: 30), "round \(round): the command never started\n\(cluster.logs)")
            let grandchild = try #require(pid_t(line))

            let sent = ContinuousClock.now
            _ = try client.request { $0.cancel.operation = target }
            var finished: Opq_V1_OperationEvent?
            while finished == nil, let events = try targetStream.operationEvents(until: Date().addingTimeInterval(30)) {
                finished = events.first { $0.operation == target && $0.state == .finished }
            }
            let elapsed = ContinuousClock.now - sent
            let event = try #require(finished, "round \(round): the cancelled command never finished\n\(cluster.logs)")
            #expect(elapsed < .seconds(1), "round \(round): cancel → finished took \(elapsed) on a saturated machine")
            #expect(event.outcome == .cancelled && event.reason == .cancelRequested)
            #expect(kill(grandchild, 0) != 0 && errno == ESRCH, "round \(round): the grandchild outlived the cancel")
        }

        // Keep the load for three liveness periods in all, watching for any sign of a lost worker.
        _ = try watchHogs(until: loadStarted.addingTimeInterval(3 * 1.5))
        #expect(lostWorkerSigns.isEmpty, "a busy worker was declared lost: \(lostWorkerSigns)\n\(cluster.logs)")
        let coordinatorLog = cluster.coordinator?.output ?? ""
        #expect(coordinatorLog.contains("journal replayed") && !coordinatorLog.contains("worker lost"), "\(cluster.logs)")
        #expect(busy.submissions > 0, "the coordinator was kept busy")
    }
}

/// A client submitting empty jobs to the queue `busy` as fast as the coordinator answers, on a thread
/// of its own, until stopped.
final class BusyClient: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopping = false
    private var stopped = false
    private var count = 0

    init(endpoint: String) {
        let thread = Thread { [self] in
            // Made on this thread, the only one that uses it.
            let connection = try? CoordinatorConnection(endpoint: endpoint)
            let empty = Submission([OperationSpec(queue: "busy")])
            while let connection, !condition.withLock({ stopping }) {
                if (try? connection.submit(empty)) != nil { condition.withLock { count += 1 } }
            }
            condition.withLock {
                stopped = true
                condition.broadcast()
            }
        }
        thread.start()
    }

    /// Submissions acknowledged so far.
    var submissions: Int { condition.withLock { count } }

    /// Stops the loop and waits (10 s at most) for its last request to end.
    func stop() {
        let deadline = Date().addingTimeInterval(10)
        condition.withLock {
            stopping = true
            while !stopped, condition.wait(until: deadline) {}
        }
    }
}

extension CoordinatorConnection {
    /// The operation events of the next `Events` message on this watch stream, waiting until
    /// `deadline`; nil when none came by then.
    func operationEvents(until deadline: Date) throws -> [Opq_V1_OperationEvent]? {
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let message = try nextStreamMessage(timeout: left) else { return nil }
            guard case .events(let events) = message.body else { continue }
            return events.items.compactMap { if case .operation(let event) = $0.kind { event } else { nil } }
        }
    }
}
