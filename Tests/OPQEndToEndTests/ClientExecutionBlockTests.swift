import Foundation
import OPQClient
import OPQCore
import OPQWorker
import Testing

/// Foundation's `BlockOperation.addExecutionBlock` from a client program (README "Execution blocks"):
/// one operation made of several handler calls that one embedded worker runs at once, against a live
/// coordinator. The blocks meet (so they ran concurrently), their results come back in order, a failing
/// block is named, a cancel reaches every running block, and adding a block too late throws.
@Suite(.serialized) struct ClientExecutionBlockTests {
    /// Signals shared by the worker's handlers and the test.
    final class Meeting: @unchecked Sendable {
        let arrived = ["a": DispatchSemaphore(value: 0), "b": DispatchSemaphore(value: 0)]
        /// Signalled once by each `hold` block as it starts.
        let held = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var cancelled: [String] = []

        func sawCancel(_ name: String) { lock.withLock { cancelled.append(name) } }
        var cancelledBlocks: [String] { lock.withLock { cancelled.sorted() } }
    }

    /// A coordinator and an embedded worker with one slot offering `meet`, `greet`, `fail` and `hold`.
    private static func start(_ meeting: Meeting) throws -> (TestCluster, Worker) {
        let cluster = try TestCluster()
        do {
            try cluster.startCoordinator()
            let worker = try Worker(coordinator: cluster.workersEndpoint, name: "blocks", slots: 1, builtins: false)
            worker.register("meet", returning: { context in
                let me = context.payloadText ?? ""
                let other = me == "a" ? "b" : "a"
                meeting.arrived[me]?.signal()
                guard meeting.arrived[other]?.wait(timeout: .now() + 60) == .success else {
                    throw HandlerError("block \(me) ran alone")
                }
                meeting.arrived[other]?.signal()
                return Array("met \(me)".utf8)
            })
            worker.register("greet", returning: { context in Array("hello \(context.payloadText ?? "")".utf8) })
            worker.register("fail", returning: { _ in throw HandlerError("disk on fire") })
            worker.register("hold") { context in Hold(context: context, meeting: meeting) }
            worker.start()
            return (cluster, worker)
        } catch {
            cluster.stop()
            throw error
        }
    }

    /// Runs `body` with a fresh coordinator and worker (``start(_:)``) and a queue `blocks` on them; stops
    /// everything afterwards, also when it throws.
    private static func withQueue(_ body: (Meeting, TestCluster, RemoteOperationQueue) throws -> Void) throws {
        let meeting = Meeting()
        let (cluster, worker) = try start(meeting)
        defer { cluster.stop() }
        defer { stop(worker) }
        let coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        try body(meeting, cluster, RemoteOperationQueue(name: "blocks", coordinator: coordinator))
    }

    private static func stop(_ worker: Worker) {
        worker.stop(handBack: true)
        #expect((try? worker.waitUntilStopped(timeout: 30)) == true, "the worker stopped")
    }

    @Test func theBlocksRunAtOnceOnOneSlotAndTheirResultsComeBackInOrder() throws {
        try Self.withQueue { _, cluster, queue in
            let operation = RemoteOperation()
            try operation.addExecutionBlock(handler: "meet", text: "a")
            try operation.addExecutionBlock(handler: "meet", text: "b")
            try operation.addExecutionBlock(handler: "greet", text: "world")
            #expect(operation.executionBlocks == [HandlerCall("meet", text: "a"), HandlerCall("meet", text: "b"), HandlerCall("greet", text: "world")])
            try queue.addOperation(operation)

            // Like Foundation's precondition, but a thrown error: nothing changes.
            #expect {
                try operation.addExecutionBlock(handler: "greet")
            } throws: { error in
                guard case .executionBlockRefused(_, let reason)? = error as? ClientError else { return false }
                return reason.contains("already added to a queue")
            }
            #expect(operation.executionBlocks.count == 3)

            #expect(operation.waitUntilFinished(timeout: 120), "\(cluster.logs)")
            #expect(operation.outcome == .succeeded, "\(cluster.logs)")
            #expect(try operation.blockResults == [Data("met a".utf8), Data("met b".utf8), Data("hello world".utf8)])
            #expect(try operation.result(as: [String].self) == ["met a", "met b", "hello world"])
        }
    }

    @Test func aFailingBlockFailsTheOperationNamingTheBlockAndWhy() throws {
        try Self.withQueue { _, cluster, queue in
            // A handler operation becomes the first block.
            let operation = RemoteOperation(handler: "greet", text: "x")
            try operation.addExecutionBlock(handler: "fail")
            try operation.addExecutionBlock(handler: "greet", text: "y")
            try queue.addOperation(operation)
            #expect(operation.waitUntilFinished(timeout: 120), "\(cluster.logs)")
            #expect(operation.outcome == .failed)
            #expect(operation.finishReason == .error)
            let stderr = try operation.output().standardErrorText
            #expect(stderr.contains("block 2 of 3 (handler 'fail') failed: "), "\(stderr)")
            #expect(stderr.contains("disk on fire"), "\(stderr)")

            let commands = RemoteOperation(command: ["true"])
            #expect {
                try commands.addExecutionBlock(handler: "greet")
            } throws: { error in
                guard case .executionBlockRefused(_, let reason)? = error as? ClientError else { return false }
                return reason.contains("runs commands")
            }
        }
    }

    @Test func aCancelReachesEveryRunningBlock() throws {
        try Self.withQueue { meeting, cluster, queue in
            let operation = RemoteOperation(executionBlocks: [HandlerCall("hold", text: "one"), HandlerCall("hold", text: "two")])
            try queue.addOperation(operation)
            #expect(meeting.held.wait(timeout: .now() + 60) == .success && meeting.held.wait(timeout: .now() + 60) == .success,
                    "both blocks run: \(cluster.logs)")
            operation.cancel()
            #expect(operation.waitUntilFinished(timeout: 60), "\(cluster.logs)")
            #expect(operation.outcome == .cancelled)
            #expect(meeting.cancelledBlocks == ["one", "two"], "the cancel reached both blocks")
        }
    }
}

/// A block that runs until it is cancelled (at most two minutes) and says whether the cancel reached it.
private final class Hold: HandlerOperation, @unchecked Sendable {
    private let meeting: ClientExecutionBlockTests.Meeting

    init(context: HandlerContext, meeting: ClientExecutionBlockTests.Meeting) {
        self.meeting = meeting
        super.init(context: context)
    }

    override func execute() throws {
        meeting.held.signal()
        if waitForCancellation(timeout: 120) { meeting.sawCancel(context.payloadText ?? "") }
    }
}
