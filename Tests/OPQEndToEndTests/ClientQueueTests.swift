import Foundation
import OPQClient
import OPQCore
import Testing

/// Foundation's `OperationQueue` scenarios, distributed: RemoteOperationQueue and RemoteOperation
/// against real coordinator and worker processes.
@Suite(.serialized) struct ClientQueueTests {
    @Test func aBatchOnOneSlotRunsInPriorityOrder() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        let file = live.path("order")
        let levels: [QueuePriority] = [.low, .veryHigh, .normal, .high, .veryLow]
        let operations = levels.map { level in
            let operation = RemoteOperation(command: Script.append("\(level)", to: file))
            operation.queuePriority = level
            return operation
        }
        try queue.addOperations(operations, waitUntilFinished: true)
        #expect(Evidence.lines(file) == ["veryHigh", "high", "normal", "low", "veryLow"])
        #expect(operations.allSatisfy { $0.isFinished && $0.outcome == .succeeded && $0.exitStatus == 0 })
        #expect(queue.operationCount == 0)
    }
}
