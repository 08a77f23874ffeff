import Foundation
import OPQClient
import OPQCore
import Testing

/// Misuse of OPQClient that makes Foundation's `Operation` abort or hang: each one throws or returns
/// at once, and changes nothing (SEMANTICS §9). (Adding an operation twice, waiting for one never added
/// and identity are in ``ClientErrorTests``.)
@Suite(.serialized) struct ClientMisuseTests {
    @Test func anOperationThatDependsOnItselfIsRefusedAsACycleBeforeAndAfterItWasAdded() throws {
        let lonely = RemoteOperation(command: ["true"])
        lonely.name = "lonely"
        #expect {
            try lonely.addDependency(lonely)
        } throws: { error in
            let refusal = (error as? ClientError)?.refusal
            return refusal?.code == .cycle && refusal?.cycleNames == ["lonely"] && "\(error)".contains("cannot depend on itself")
        }
        #expect(lonely.dependencies.isEmpty, "nothing changed")

        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        try queue.setSuspended(true)
        try queue.addOperation(lonely)
        #expect {
            try lonely.addDependency(lonely)
        } throws: { error in
            (error as? ClientError)?.refusal?.cycleOperations == [lonely.id!.rawValue]
        }
        #expect(lonely.dependencies.isEmpty && lonely.state == .ready, "it still waits for nothing")
        try queue.setSuspended(false)
        live.finish(lonely)
        #expect(lonely.outcome == .succeeded)
    }

    @Test func anyTimeoutIsSafeInfiniteMeansNoLimitAndNaNOrNegativeMeansDoNotWait() throws {
        let never = RemoteOperation(command: ["true"])
        for timeout in [Double.infinity, .greatestFiniteMagnitude, 1e12, .nan, -1, 0] {
            #expect(never.waitUntilFinished(timeout: timeout) == false, "timeout \(timeout): an operation never added")
        }

        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        // A connection whose requests wait as long as it takes.
        let patient = try RemoteCoordinator(endpoint: live.cluster.clientsEndpoint, timeout: .infinity)
        defer { patient.close() }
        let queue = RemoteOperationQueue(name: "patient", coordinator: patient)
        let operation = RemoteOperation(command: ["true"])
        try queue.addOperation(operation)
        #expect(operation.waitUntilFinished(timeout: .infinity), "\(live.cluster.logs)")
        #expect(operation.waitUntilFinished(timeout: .nan), "a finished operation answers at once")
        #expect(try queue.waitUntilAllOperationsAreFinished(timeout: .infinity))
        #expect(try queue.waitUntilAllOperationsAreFinished(timeout: 1e300))
        #expect(throws: ClientError.self, "a negative timeout is refused, not a crash") {
            try queue.waitUntilAllOperationsAreFinished(timeout: -1)
        }
        #expect(throws: ClientError.self) { try queue.waitUntilAllOperationsAreFinished(timeout: .nan) }
        #expect(operation.outcome == .succeeded)
    }

    @Test func anOperationIsAddedOnceEvenTwiceInOneBatchOrToTwoQueues() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let twice = RemoteOperation(command: ["true"])
        #expect {
            try live.queue("one").addOperations([twice, twice], waitUntilFinished: false)
        } throws: { error in
            if case .alreadyAdded? = error as? ClientError { true } else { false }
        }
        #expect(twice.id == nil && twice.state == nil, "the refused batch added nothing")
        try live.queue("one").addOperation(twice)
        #expect {
            try live.queue("two").addOperation(twice)
        } throws: { error in
            if case .alreadyAdded? = error as? ClientError { true } else { false }
        }
        live.finish(twice)
        #expect(try live.queue("one").status().counts.total == 1)
        #expect(try live.queue("two").status().counts.total == 0)
    }

    @Test func afterTheFinishCancelDependenciesAndPriorityChangeNothing() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        let done = RemoteOperation(command: ["true"])
        let waiting = Counter()
        done.completionBlock = {
            done.waitUntilFinished()  // from its own completion block: returns, it has finished
            waiting.bump("completion returned")
        }
        try queue.addOperation(done)
        live.finish(done)
        #expect(waiting.wait(within: 30) { $0["completion returned"] == 1 })

        done.cancel()
        #expect(!done.isCancelled && done.outcome == .succeeded, "cancelling a finished operation does nothing")
        let later = try queue.addOperation(command: ["true"])
        try done.addDependency(later)  // Foundation records it; a finished operation does not run again
        let never = RemoteOperation(command: ["true"])
        try done.addDependency(never)  // on an operation no queue has
        try done.removeDependency(later)
        done.queuePriority = .veryHigh
        live.finish(later)
        #expect(done.state == .finished && done.outcome == .succeeded && !done.isCancelled)
        #expect(done.lastError == nil)
        #expect(try queue.status().counts.total == 2, "nothing ran again")
    }

    @Test func aDependencyOnAnOperationOfAnotherCoordinatorIsRefusedNotMisdirected() throws {
        let here = try ClientCluster(workers: [])
        defer { here.stop() }
        let there = try ClientCluster(workers: [])
        defer { there.stop() }
        try there.queue().setSuspended(true)
        let remote = try there.queue().addOperation(command: ["true"])  // op-1 there
        try here.queue().setSuspended(true)
        let local = try here.queue().addOperation(command: ["true"])   // op-1 here: the same id
        #expect(remote.id == local.id, "ids are per coordinator")

        let dependant = RemoteOperation(command: ["true"])
        try dependant.addDependency(remote)
        #expect {
            try here.queue().addOperation(dependant)
        } throws: { error in
            (error as? ClientError)?.refusal?.code == .unknownDependency && "\(error)".contains(there.cluster.clientsEndpoint)
        }
        #expect(dependant.id == nil)
        #expect(try here.queue().status().counts.total == 1, "nothing was added")
        #expect {
            try local.addDependency(remote)
        } throws: { error in
            (error as? ClientError)?.refusal?.code == .unknownDependency
        }
        #expect(local.dependencies.isEmpty && local.state == .ready, "local does not wait for itself")
        try dependant.removeDependency(remote)
        try here.queue().addOperation(dependant)
        #expect(dependant.id != nil)
    }

    @Test func aClosedConnectionEndsNewEventSequencesAndRefusesWorkInsteadOfHanging() async throws {
        let live = try await ClientCluster.start(workers: [])
        defer { live.stop() }
        let coordinator = live.coordinator
        coordinator.close()
        let ended = try await withTimeout(seconds: 30) { () -> Int in
            var count = 0
            for await _ in coordinator.events() { count += 1 }
            return count
        }
        #expect(ended == 0, "the sequence of a closed connection ends at once")
        let operation = RemoteOperation(command: ["true"])
        #expect {
            try live.queue().addOperation(operation)
        } throws: { error in
            if case .closed? = error as? ClientError { true } else { false }
        }
        #expect(operation.id == nil && operation.waitUntilFinished(timeout: 30) == false)
    }

    @Test func anInvalidMaxConcurrentOperationCountIsKeptAsLastErrorNotAnAbort() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue("limits")
        queue.maxConcurrentOperationCount = -5  // Foundation: fatalError("count (-5) cannot be negative")
        #expect(queue.lastError?.refusal?.code == .invalidMaxConcurrent)
        #expect(queue.maxConcurrentOperationCount == -1, "nothing changed")
    }
}
