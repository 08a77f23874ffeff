import Foundation
import OPQClient
import OPQCore
import Testing

/// One connection used from many threads at once, under a stream of events.
@Suite(.serialized) struct ClientConcurrencyTests {
    @Test func operationsAddedFromSeveralThreadsAllFinishAndCompleteOnce() throws {
        let live = try ClientCluster(workers: [4, 4])
        defer { live.stop() }
        let calls = Counter()
        let failures = Counter()
        let threads = 4
        let perThread = 60
        let added = Added()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            let queue = live.queue("q\(thread % 2)")
            var previous: RemoteOperation?
            for k in 0..<perThread {
                // Alternate commands and empty operations; chain every third to the one before it.
                let operation = k % 2 == 0 ? RemoteOperation(command: ["true"]) : RemoteOperation()
                let name = "t\(thread)-\(k)"
                operation.name = name
                operation.completionBlock = { calls.bump(name) }
                if k % 3 == 0, let previous { try? operation.addDependency(previous) }
                do { try queue.addOperation(operation) } catch { failures.bump("\(error)") }
                previous = operation
                added.append(operation)
            }
        }
        #expect(failures.wait(within: 0) { $0.isEmpty }, "every add was accepted")
        let operations = added.all
        #expect(operations.count == threads * perThread)
        for operation in operations { live.finish(operation, within: 120) }
        let total = threads * perThread
        #expect(calls.wait(within: 60) { $0.values.reduce(0, +) >= total })
        #expect(operations.allSatisfy { $0.outcome == .succeeded })
        #expect(calls.wait(within: 0) { $0.count == total && $0.values.allSatisfy { $0 == 1 } }, "each completion block ran once")
        for name in ["q0", "q1"] { #expect(live.queue(name).operationCount == 0) }
    }
}

/// Operations collected from several threads.
private final class Added: @unchecked Sendable {
    private let lock = NSLock()
    private var operations: [RemoteOperation] = []

    func append(_ operation: RemoteOperation) { lock.withLock { operations.append(operation) } }

    var all: [RemoteOperation] { lock.withLock { operations } }
}
