import Foundation
import OPQClient
import OPQCore
import Testing

/// Foundation's `OperationQueue` scenarios, distributed: RemoteOperationQueue and RemoteOperation
/// against real coordinator and worker processes. What ran is observed through files the commands write.
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

    @Test func operationsOfOneLevelRunFirstInFirstOut() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        let file = live.path("order")
        let names = (1...6).map { "op\($0)" }
        let operations = try names.map { try queue.addOperation(command: Script.append($0, to: file)) }
        for operation in operations { live.finish(operation) }
        #expect(Evidence.lines(file) == names)
    }

    @Test func anOperationCancelledBeforeItStartsFinishesCancelledWithoutRunning() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        let file = live.path("log")
        let started = try Signal(live.path("started"))
        let release = try Signal(live.path("release"))
        let blocker = try queue.addOperation(command: Script.block(started: started, release: release, then: "blocker", to: file))
        #expect(started.wait(within: 30) == "up")
        let waiting = try queue.addOperation(command: Script.append("waiting", to: file))
        waiting.cancel()
        #expect(waiting.isCancelled, "isCancelled turns true at once")
        live.finish(waiting)
        #expect(waiting.outcome == .cancelled && !blocker.isFinished, "it finished while the slot was still taken")
        // Cancelled before it was ever added: finishes cancelled as soon as it is added, never runs.
        let early = RemoteOperation(command: Script.append("early", to: file))
        early.cancel()
        try queue.addOperation(early)
        live.finish(early)
        #expect(early.outcome == .cancelled && early.isCancelled)
        release.release()
        live.finish(blocker)
        #expect(Evidence.lines(file) == ["blocker"])
    }

    @Test func aCancelledDependencyUnlocksItsDependant() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let held = live.queue("held")
        try held.setSuspended(true)
        let file = live.path("log")
        let dependency = RemoteOperation(command: Script.append("dependency", to: file))
        let dependant = RemoteOperation(command: Script.append("dependant", to: file))
        try dependant.addDependency(dependency)
        try held.addOperation(dependency)
        try live.queue().addOperation(dependant)
        #expect(!dependant.isReady)
        dependency.cancel()
        live.finish(dependant)
        #expect(dependency.outcome == .cancelled)
        #expect(dependant.outcome == .succeeded && Evidence.lines(file) == ["dependant"])
    }

    @Test func aDependantAddedBeforeItsDependencyWaitsForIt() throws {
        let live = try ClientCluster(workers: [2])
        defer { live.stop() }
        let queue = live.queue()
        let file = live.path("log")
        let first = RemoteOperation(command: Script.append("first", to: file))
        let second = RemoteOperation(command: Script.append("second", to: file))
        try second.addDependency(first)
        try queue.addOperation(second)
        #expect(second.state == .pending && !second.isReady, "it waits for a dependency no queue has yet")
        #expect(try queue.status().counts.pending == 1)
        try queue.addOperation(first)
        live.finish(second)
        #expect(Evidence.lines(file) == ["first", "second"])
        #expect(second.dependencies.count == 1 && second.dependencies[0] === first)
    }

    @Test func aDependencyAcrossQueuesHoldsTheDependantUntilItEnds() throws {
        let live = try ClientCluster(workers: [2])
        defer { live.stop() }
        let file = live.path("intervals")
        let slow = RemoteOperation(work: Evidence.interval("slow", to: file, sleep: 0.3))
        let after = RemoteOperation(work: Evidence.interval("after", to: file, sleep: 0))
        try after.addDependency(slow)
        try live.queue("render").addOperation(after)
        try live.queue("fetch").addOperation(slow)
        live.finish(after)
        let lines = Evidence.lines(file)
        #expect(lines.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } == ["start slow", "end slow", "start after", "end after"])
    }

    @Test func waitingForAQueueWaitsForItsCrossQueueDependency() throws {
        let live = try ClientCluster(workers: [2])
        defer { live.stop() }
        let other = live.queue("other")
        let queue = live.queue("mine")
        let slow = RemoteOperation(command: ["sleep", "1"])
        let mine = RemoteOperation(command: ["true"])
        try mine.addDependency(slow)
        try other.addOperation(slow)
        try queue.addOperation(mine)
        #expect(queue.operationCount == 1)
        queue.waitUntilAllOperationsAreFinished()
        #expect(queue.lastError == nil)
        #expect(slow.outcome == .succeeded && mine.outcome == .succeeded, "it returned after both")
        #expect(queue.operationCount == 0)
    }

    @Test func operationCountAndOperationsFollowSubmissionOrder() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        queue.isSuspended = true
        #expect(queue.isSuspended && queue.lastError == nil)
        let names = ["c", "a", "b"]
        var added: [RemoteOperation] = []
        for name in names {
            let operation = RemoteOperation(command: ["true"])
            operation.name = name
            try queue.addOperation(operation)
            added.append(operation)
        }
        try queue.addBarrier()
        added[0].queuePriority = .veryHigh
        #expect(queue.operationCount == 3, "barriers are not counted")
        let listed = queue.operations
        #expect(listed.map(\.name) == names)
        #expect(zip(listed, added).allSatisfy { $0 === $1 }, "the program's own handles")
        queue.isSuspended = false
        try live.drain(queue)
        #expect(queue.operationCount == 0 && queue.operations.isEmpty)
    }

    @Test func aBarrierWaitsForEverythingBeforeItAndHoldsEverythingAfter() throws {
        let live = try ClientCluster(workers: [4])
        defer { live.stop() }
        let queue = live.queue()
        let file = live.path("log")
        try queue.addOperation(RemoteOperation(work: Evidence.append("a", to: file, after: 0.2)))
        try queue.addOperation(RemoteOperation(work: Evidence.append("b", to: file, after: 0.1)))
        let barrier = try queue.addBarrier(command: ["/bin/sh", "-c", "echo \"barrier $(wc -l < \"$0\")\" >> \"$0\"", file])
        let late = RemoteOperation(command: Script.append("c", to: file))
        late.queuePriority = .veryHigh
        try queue.addOperation(late)
        let empty = try queue.addBarrier()
        try live.drain(queue)
        #expect(barrier.isBarrier && barrier.outcome == .succeeded && empty.outcome == .succeeded)
        let lines = Evidence.lines(file)
        #expect(Set(lines.prefix(2)) == ["a", "b"])
        #expect(lines.suffix(2) == ["barrier 2", "c"])
    }

    @Test func aMaximumOfTwoReallyRunsTwoAtOnce() throws {
        let live = try ClientCluster(workers: [1, 1, 1])
        defer { live.stop() }
        let queue = live.queue()
        queue.maxConcurrentOperationCount = 2
        #expect(queue.maxConcurrentOperationCount == 2)
        // Each waits (at most 20 s) for the other's file: both succeed only if they ran at the same time.
        let left = RemoteOperation(command: Script.meet(live.path("left"), live.path("right")))
        let right = RemoteOperation(command: Script.meet(live.path("right"), live.path("left")))
        try queue.addOperations([left, right], waitUntilFinished: true)
        #expect(left.outcome == .succeeded && right.outcome == .succeeded)
    }

    @Test func completionBlocksRunOnceAlsoForCancelledOperations() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        let calls = Counter()
        let started = try Signal(live.path("started"))
        let release = try Signal(live.path("release"))
        let runs = try queue.addOperation(command: Script.block(started: started, release: release, then: "runs", to: live.path("log")))
        #expect(started.wait(within: 30) == "up")
        let cancelled = RemoteOperation(command: ["true"])
        let before = RemoteOperation(command: ["true"])
        for (name, operation) in [("runs", runs), ("cancelled", cancelled), ("before", before)] {
            operation.completionBlock = {
                #expect(operation.isFinished, "called after the operation finished")
                calls.bump(name)
            }
        }
        before.cancel()
        try queue.addOperation(cancelled)
        try queue.addOperation(before)
        cancelled.cancel()
        // cancel() is sent and forgotten: released before the coordinator heard of it, `runs`' finish could
        // free the slot and `cancelled` start (and succeed) first. Once finished, it never runs.
        live.finish(cancelled)
        release.release()
        try live.drain(queue)
        #expect(calls.wait(within: 30) { $0.values.reduce(0, +) >= 3 })
        #expect(calls["runs"] == 1 && calls["cancelled"] == 1 && calls["before"] == 1)
        #expect(runs.outcome == .succeeded && cancelled.outcome == .cancelled && before.outcome == .cancelled)
    }

    @Test func progressCountsFinishedOperations() throws {
        let live = try ClientCluster(workers: [2])
        defer { live.stop() }
        let queue = live.queue("progress")
        queue.isSuspended = true
        let operations = (1...4).map { _ in RemoteOperation(command: ["true"]) }
        try queue.addOperations(operations, waitUntilFinished: false)
        try queue.addBarrier()
        var progress = queue.progress
        #expect(progress.totalUnitCount == 4 && progress.completedUnitCount == 0)
        operations[3].cancel()
        live.finish(operations[3])
        progress = queue.progress
        #expect(progress.completedUnitCount == 1)
        queue.isSuspended = false
        try live.drain(queue)
        progress = queue.progress
        #expect(progress.totalUnitCount == 4 && progress.completedUnitCount == 4 && progress.fractionCompleted == 1)
    }

    @Test func removingAnUnfinishedDependencyMakesTheOperationReady() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let held = live.queue("held")
        try held.setSuspended(true)
        let never = try held.addOperation(command: ["true"])
        let unsubmitted = RemoteOperation(command: ["true"])
        let dependant = RemoteOperation(command: ["true"])
        try dependant.addDependency(never)
        try dependant.addDependency(unsubmitted)
        try live.queue().addOperation(dependant)
        #expect(!dependant.isReady)
        try dependant.removeDependency(never)
        try dependant.removeDependency(unsubmitted)
        #expect(dependant.dependencies.isEmpty)
        live.finish(dependant)
        #expect(dependant.outcome == .succeeded && !never.isFinished)
    }
}
