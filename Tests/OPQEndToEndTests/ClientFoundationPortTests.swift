import Foundation
import OPQClient
import OPQCore
import OPQWorker
import Testing

/// swift-corelibs-foundation's own `TestOperationQueue` (Tests/Foundation/TestOperationQueue.swift),
/// scenario by scenario, against a live coordinator and an embedded worker (``BlockCluster``): each
/// `BlockOperation` becomes a ``RemoteOperation`` whose block runs on the worker. Foundation's
/// `Thread.sleep`s, which stand for "still running", become blocks that wait (bounded) until the test lets
/// them go; its one-second expectations become bounded waits.
///
/// Not ported (no remote counterpart): `test_AsyncOperation` and `test_SyncOperationWithoutAQueue`
/// (`start()` without a queue: a remote operation runs only from a queue), `test_MainQueueGetter` and
/// `test_CurrentQueueOnMainQueue` (no main queue), `test_CurrentQueueWithCustomUnderlyingQueue` and
/// `…UnderlyingQueueResetToNil` (no `underlyingQueue`), `test_CustomOperationReady` (an `isReady`
/// override; skipped upstream too). Forward dependencies and cycles (`test_Deadlock`,
/// `test_CrossQueueDependency`, `test_DependencyCycleBreak`) are ported with that work (issue 18).
@Suite(.serialized) struct ClientFoundationPortTests {
    /// A block that says it started, then waits (bounded) until `release` is in `trace`.
    static func held(_ trace: Trace, _ started: String, until release: String) -> @Sendable (HandlerContext) -> Void {
        { _ in
            trace.append(started)
            trace.wait(for: release, within: 60)
        }
    }

    /// `count` operations `op0`… whose blocks append their number; the first then waits (bounded) for
    /// "go". Foundation's blocks sleep 2 s so that the later ones have not started when the test cancels
    /// some; here the first one holds a queue of one until the test says "go".
    static func firstHolds(_ live: BlockCluster, _ trace: Trace, count: Int) -> [RemoteOperation] {
        (0..<count).map { i in
            live.operation("op\(i)") { _ in
                trace.append("\(i)")
                if i == 0 { trace.wait(for: "go", within: 60) }
            }
        }
    }

    @Test func test_OperationCount() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let queue = live.queue("count")
        let trace = Trace()
        let op1 = live.operation("op1", Self.held(trace, "op1", until: "go1"))
        try queue.addOperation(op1)
        #expect(queue.operationCount == 1)
        trace.append("go1")
        try live.drain(queue)
        #expect(queue.operationCount == 0)

        let op2 = live.operation("op2", Self.held(trace, "op2", until: "go2"))
        let op3 = live.operation("op3")
        try queue.addOperation(op2)
        try queue.addOperation(op3)
        #expect(queue.operationCount == 2)
        let operations = queue.operations
        #expect(operations.count == 2)
        if operations.count == 2 {
            #expect(operations[0] == op2)
            #expect(operations[1] == op3)
        }
        trace.append("go2")
        try live.drain(queue)
        #expect(queue.operationCount == 0)
        #expect(queue.operations.isEmpty)
    }

    @Test func test_OperationPriorities() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        let operations = (1...4).map { k in live.operation("op\(k)") { _ in trace.append("Operation\(k) executed") } }
        operations[3].queuePriority = .veryLow
        operations[2].queuePriority = .veryHigh
        operations[1].queuePriority = .low
        operations[0].queuePriority = .normal
        let queue = live.queue("priorities")
        queue.maxConcurrentOperationCount = 1
        try queue.addOperations(operations, waitUntilFinished: true)
        #expect(trace.all == ["Operation3 executed", "Operation1 executed", "Operation2 executed", "Operation4 executed"])
    }

    @Test func test_isExecutingWorks() async throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        let op = live.operation("op", Self.held(trace, "running", until: "checked"))
        #expect(!op.isExecuting)
        let events = op.events
        let executing = Task { () -> Bool in
            for await event in events {
                if case .stateChanged(let change) = event, change.state == .executing { return true }
            }
            return false
        }
        try await live.queue("executing").addOperation(op)
        // Foundation's block asserts its own isExecuting; here the block waits until the client saw it.
        let sawExecuting = try await withTimeout(seconds: 60) { await executing.value }
        // `executing` is the worker's word that it started the attempt: the block's first line may come a
        // moment later, on the worker's queue thread.
        #expect(sawExecuting && op.isExecuting, "isExecuting as the worker starts the block\n\(live.cluster.logs)")
        #expect(await offPool { trace.wait(for: "running") } && op.isExecuting, "isExecuting while the block runs")
        trace.append("checked")
        try await withTimeout(seconds: 60) { _ = try await op.finished }
        #expect(!op.isExecuting && op.isFinished)
    }

    @Test func test_CancelOneOperation() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        var operations = Self.firstHolds(live, trace, count: 5)
        let queue = live.queue("cancel-one")
        queue.maxConcurrentOperationCount = 1
        try queue.addOperations(operations, waitUntilFinished: false)
        let cancelled = operations.remove(at: 2)
        cancelled.cancel()
        trace.append("go")
        try live.drain(queue)
        #expect(!trace.contains("2"))
        #expect(cancelled.outcome == .cancelled && cancelled.isCancelled)
        #expect(operations.allSatisfy { $0.outcome == .succeeded })
    }

    @Test func test_CancelOperationsOfSpecificQueuePriority() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        let operations = Self.firstHolds(live, trace, count: 5)
        operations[0].queuePriority = .high
        operations[1].queuePriority = .high
        for operation in operations[2...] { operation.queuePriority = .normal }
        let queue = live.queue("cancel-normal")
        queue.maxConcurrentOperationCount = 1
        try queue.addOperations(operations, waitUntilFinished: false)
        for operation in operations where operation.queuePriority == .normal { operation.cancel() }
        trace.append("go")
        try live.drain(queue)
        #expect(trace.all.filter { $0 != "go" } == ["0", "1"])
    }

    @Test func test_CurrentQueueOnBackgroundQueue() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        let queue = live.queue("background")
        let op = live.operation("op") { context in trace.append(context.queueName) }
        try queue.addOperation(op)
        live.finish(op)
        #expect(trace.all == ["background"], "OperationQueue.current, by name")
    }

    @Test func test_CurrentQueueOnBackgroundQueueWithSelfCancel() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        let queue = live.queue("self-cancel")
        queue.maxConcurrentOperationCount = 1
        let coordinator = live.coordinator
        let op = live.operation("op") { context in
            trace.append(context.queueName)
            // Cancelling operation X from inside operation X must not crash anything.
            do {
                try RemoteOperationQueue(name: context.queueName, coordinator: coordinator).cancelAllOperations()
                trace.append("cancelled all")
            } catch {
                trace.append("\(error)")
            }
        }
        try queue.addOperation(op)
        live.finish(op)
        #expect(trace.all == ["self-cancel", "cancelled all"])
        #expect(op.isCancelled && op.isFinished && !op.isExecuting)
    }

    @Test func test_isSuspended() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        let queue = live.queue("suspended")
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let op = live.operation("op") { context in trace.append(context.queueName) }
        try queue.addOperation(op)
        let resumed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            queue.isSuspended = false
            resumed.signal()
        }
        #expect(resumed.wait(timeout: .now() + 30) == .success)
        live.finish(op)
        #expect(trace.all == ["suspended"])
        #expect(queue.lastError == nil)
    }

    @Test func test_OperationDependencyCount() throws {
        let op1 = RemoteOperation()
        op1.name = "op1"
        let op2 = RemoteOperation()
        op2.name = "op2"
        try op1.addDependency(op2)
        #expect(op1.dependencies.count == 1)
    }

    @Test func test_CancelDependency() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        let queue = live.queue("cancel-dependency")
        queue.maxConcurrentOperationCount = 1
        let op1 = live.operation("op1") { _ in trace.append("op1 ran") }
        let op2 = live.operation("op2") { _ in trace.append("op2 ran") }
        try op2.addDependency(op1)
        op1.cancel()
        try queue.addOperation(op1)
        try queue.addOperation(op2)
        live.finish(op2)
        #expect(trace.all == ["op2 ran"], "op1 should not run")
        #expect(op1.outcome == .cancelled && op2.outcome == .succeeded)
    }

    @Test func test_CancelOutOfQueue() {
        let op = RemoteOperation()
        op.cancel()
        #expect(op.isCancelled)
        #expect(!op.isExecuting)
        #expect(!op.isFinished)
    }

    @Test func test_CancelWhileSuspended() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let queue = live.queue("cancel-suspended")
        queue.isSuspended = true
        let op1 = live.operation("op1")
        let op2 = live.operation("op2")
        try queue.addOperation(op1)
        try queue.addOperation(op2)
        op1.cancel()
        op2.cancel()
        queue.isSuspended = false
        try live.drain(queue)
        for op in [op1, op2] {
            live.finish(op)  // the queue drained; this client's copy follows its event stream
            #expect(op.isCancelled && !op.isExecuting && op.isFinished)
        }
    }

    /// Five operations added one by one to a suspended queue of one, then resumed: they run in
    /// priority order, first in first out within a level.
    func runInOrder(_ priorities: [QueuePriority]) throws -> [String] {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let queue = live.queue("order")
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let trace = Trace()
        for (k, priority) in priorities.enumerated() {
            let op = live.operation("op\(k + 1)") { _ in trace.append("\(k + 1)") }
            op.queuePriority = priority
            try queue.addOperation(op)
        }
        queue.isSuspended = false
        try live.drain(queue)
        return trace.all
    }

    @Test func test_OperationOrder() throws {
        #expect(try runInOrder(Array(repeating: .normal, count: 5)) == ["1", "2", "3", "4", "5"])
    }

    @Test func test_OperationOrder2() throws {
        #expect(try runInOrder([.veryLow, .low, .normal, .high, .veryHigh]) == ["5", "4", "3", "2", "1"])
    }

    @Test func test_ExecutionOrder() throws {
        let live = try BlockCluster(slots: 2)
        defer { live.stop() }
        let trace = Trace()
        let queue = live.queue("execution-order")
        let op1 = live.operation("op1") { _ in trace.append(trace.contains("dependency") ? "op1 after its dependency" : "op1 first") }
        let op1Dependency = live.operation("dependency") { _ in trace.append("dependency") }
        try op1.addDependency(op1Dependency)
        try queue.addOperations([op1, op1Dependency], waitUntilFinished: false)
        let op2 = live.operation("op2") { _ in trace.append("op2") }
        try queue.addOperation(op2)
        try live.drain(queue)
        #expect(trace.contains("op1 after its dependency") && !trace.contains("op1 first"), "Dependency should be executed first")
        #expect(trace.contains("op2"))
    }

    @Test func test_WaitUntilFinished() throws {
        let live = try BlockCluster(slots: 2)
        defer { live.stop() }
        let trace = Trace()
        let queue1 = live.queue("wait-1")
        let queue2 = live.queue("wait-2")
        // Foundation's op1 sleeps 1 s; here it runs until a thread of the test lets it go.
        let op1 = live.operation("op1", Self.held(trace, "op1 started", until: "go"))
        let op2 = live.operation("op2")
        try op2.addDependency(op1)
        try queue1.addOperation(op1)
        try queue2.addOperation(op2)
        DispatchQueue.global().async {
            trace.wait(for: "op1 started", within: 60)
            trace.append("go")
        }
        queue2.waitUntilAllOperationsAreFinished()
        #expect(queue2.lastError == nil)
        #expect(queue2.operationCount == 0)
        #expect(op1.isFinished && op2.isFinished, "op2 waited for its dependency in the other queue")
    }

    @Test func test_OperationWaitUntilFinished() throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        let queue1 = live.queue("op-wait")
        let op1 = live.operation("op1", Self.held(trace, "started", until: "go"))
        try queue1.addOperation(op1)
        DispatchQueue.global().async {
            trace.wait(for: "started", within: 60)
            trace.append("go")
        }
        op1.waitUntilFinished()
        #expect(op1.isFinished)
        // Foundation sleeps 0.1 s here before looking at the count: the coordinator counts the operation
        // finished before it tells anyone, so no wait is needed.
        #expect(queue1.operationCount == 0)
    }

    @Test func test_Lifecycle() throws {
        let live = try BlockCluster(slots: 2)
        defer { live.stop() }
        let trace = Trace()
        let op1 = live.operation("op1") { _ in trace.append("op1") }
        let op2 = live.operation("op2") { _ in
            trace.append("opStarted")
            trace.wait(for: "cancelled", within: 60)
            trace.append("opDone")
        }
        try op1.addDependency(op2)
        weak var weakQueue: RemoteOperationQueue?
        try {
            let queue = live.queue("lifecycle")
            weakQueue = queue
            try queue.addOperation(op1)
            try queue.addOperation(op2)
        }()
        #expect(trace.wait(for: "opStarted", within: 60), "\(live.cluster.logs)")
        op2.cancel()
        trace.append("cancelled")
        #expect(trace.wait(for: "opDone", within: 60), "a running block runs to its end after a cancel")
        live.finish(op2)
        live.finish(op1)
        // Foundation's op2 is cancelled and finished; its outcome here is `cancelled` or, when the block
        // returned before the worker heard of the cancel, `succeeded` (SEMANTICS §5).
        #expect(op2.isCancelled && op2.isFinished && !op2.isExecuting)
        #expect(op1.outcome == .succeeded && trace.contains("op1"), "a cancelled dependency still releases its dependant")
        #expect(weakQueue == nil, "Queue should be deallocated at this point")
    }

    @Test func test_ConcurrentOperations() throws {
        let live = try BlockCluster(slots: 2)
        defer { live.stop() }
        let queue = live.queue("concurrent")
        queue.maxConcurrentOperationCount = 2
        for round in 0..<3 {
            let trace = Trace()
            let op1 = live.operation("op1-\(round)") { _ in
                trace.append(trace.wait(for: "op2", within: 30) ? "op1 saw op2" : "op1 alone")
            }
            let op2 = live.operation("op2-\(round)") { _ in trace.append("op2") }
            try queue.addOperation(op1)
            try queue.addOperation(op2)
            live.finish(op1)
            #expect(trace.contains("op1 saw op2"), "round \(round): both ran at once")
        }
    }

    @Test func test_ConcurrentOperationsWithDependenciesAndCompletions() throws {
        let live = try BlockCluster(slots: 2)
        defer { live.stop() }
        let queue = live.queue("concurrent-completions")
        queue.maxConcurrentOperationCount = 2
        for round in 0..<3 {
            let trace = Trace()
            let op1 = live.operation("op1") { _ in
                let both = trace.wait(for: "dependency", within: 30) && trace.wait(for: "op2", within: 30)
                trace.append(both ? "op1 saw both" : "op1 alone")
            }
            op1.completionBlock = { trace.append("op1 completion") }
            let op1Dependency = live.operation("dependency") { _ in trace.append("dependency") }
            try queue.addOperations([op1, op1Dependency], waitUntilFinished: false)
            let op2 = live.operation("op2") { _ in trace.append("op2") }
            try queue.addOperation(op2)
            #expect(trace.wait(for: "op1 completion", within: 60), "round \(round)\n\(live.cluster.logs)")
            #expect(trace.contains("op1 saw both"), "round \(round)")
        }
    }

    @Test func test_BlockOperationAddExecutionBlock() throws {
        // Execution blocks of one operation are its commands (`commands:`), run at once on one worker.
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let (block1, block2) = (live.path("block1"), live.path("block2"))
        let operation = RemoteOperation(commands: [["touch", block1], ["touch", block2]])
        if case .commands(let blocks) = operation.work { #expect(blocks.count == 2) } else { Issue.record("not two blocks") }
        try live.queue().addOperation(operation)
        live.finish(operation)
        #expect(operation.outcome == .succeeded)
        #expect(FileManager.default.fileExists(atPath: block1) && FileManager.default.fileExists(atPath: block2))
    }
}
