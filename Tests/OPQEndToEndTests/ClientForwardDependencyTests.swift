import Foundation
import OPQClient
import OPQCore
import Testing

/// Dependencies on operations no queue has yet (issue 18): held by the coordinator's core on a
/// reservation, with nothing else to see (no gate operations, no extra queue), kept across a restart,
/// given up when the connection closes.
@Suite(.serialized) struct ClientForwardDependencyTests {
    /// Every queue of the coordinator, by name, with its operation total.
    static func queueTotals(_ live: ClientCluster) throws -> [String: Int] {
        let client = try CoordinatorClient(endpoint: live.cluster.clientsEndpoint)
        return Dictionary(uniqueKeysWithValues: try client.queues().map { ($0.name, $0.counts.total) })
    }

    @Test func aDependencyOnAnOperationNotAddedYetAddsNothingElseToTheCoordinator() throws {
        let live = try ClientCluster(workers: [2])
        defer { live.stop() }
        let queue = live.queue()
        let file = live.path("log")
        let first = RemoteOperation(command: Script.append("first", to: file))
        let second = try queue.addOperation(command: Script.append("second", to: file))
        try queue.setSuspended(true)
        let third = try queue.addOperation(command: Script.append("third", to: file))
        try third.addDependency(first)  // accepted operation → operation in no queue
        #expect(third.dependencies == [first])
        #expect(try Self.queueTotals(live) == ["default": 2], "no gate operation and no gate queue")
        try queue.setSuspended(false)
        live.finish(second)
        #expect(third.state == .pending && first.id == nil)
        try queue.addOperation(first)
        live.finish(third)
        #expect(Evidence.lines(file) == ["second", "first", "third"])
        #expect(try Self.queueTotals(live) == ["default": 3])
    }

    @Test func removingADependencyOnAnOperationNotAddedYetReleasesTheDependant() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        let never = RemoteOperation(command: ["true"])
        let dependant = RemoteOperation(command: ["true"])
        try dependant.addDependency(never)
        try queue.addOperation(dependant)
        #expect(dependant.state == .pending)
        try dependant.removeDependency(never)
        live.finish(dependant)
        #expect(dependant.outcome == .succeeded && dependant.dependencies.isEmpty && never.id == nil)
    }

    @Test func closingTheConnectionGivesUpTheOperationsItNeverAdded() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let other = try RemoteCoordinator(endpoint: live.cluster.clientsEndpoint, timeout: 20)
        let queue = RemoteOperationQueue(name: "left", coordinator: other)
        let never = RemoteOperation(command: ["true"])
        let tolerant = RemoteOperation(command: ["true"])
        let strict = RemoteOperation(command: ["true"])
        strict.requires = .success
        try tolerant.addDependency(never)
        try strict.addDependency(never)
        try queue.addOperations([tolerant, strict], waitUntilFinished: false)
        #expect(try live.queue("left").status().counts.pending == 2)
        other.close()
        // Seen through the cluster's own connection: as if `never` had finished cancelled.
        try live.drain(live.queue("left"))
        let counts = try live.queue("left").status().counts
        #expect(counts.succeeded == 1 && counts.cancelled == 1)
    }

    @Test func aForwardDependencyOutlivesACoordinatorRestart() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        let file = live.path("log")
        let later = RemoteOperation(command: Script.append("later", to: file))
        let waiting = RemoteOperation(command: Script.append("waiting", to: file))
        try waiting.addDependency(later)
        try queue.addOperation(waiting)
        live.cluster.killCoordinator()
        try live.cluster.startCoordinator()
        #expect(try queue.status().counts.pending == 1, "still waiting after the restart")
        try queue.addOperation(later)
        try live.drain(queue)
        #expect(Evidence.lines(file) == ["later", "waiting"])
    }

    @Test func aThrowingAddChangesNothingAndTheOperationCanBeAddedOnceFixed() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        try queue.setSuspended(true)
        let (a, b, c) = (RemoteOperation(), RemoteOperation(), RemoteOperation())
        (a.name, b.name, c.name) = ("a", "b", "c")
        try b.addDependency(a)
        try queue.addOperation(b)  // b waits for a, which no queue has
        try c.addDependency(b)
        try a.addDependency(c)  // a → c → b → a
        #expect(throws: ClientError.self) { try queue.addOperations([c, a], waitUntilFinished: false) }
        #expect(a.id == nil && c.id == nil && b.state == .pending)
        #expect(try queue.status().counts.total == 1, "neither a nor c was accepted")
        try a.removeDependency(c)
        try queue.addOperations([c, a], waitUntilFinished: false)
        try queue.setSuspended(false)
        live.finish(c)
        #expect(a.outcome == .succeeded && b.outcome == .succeeded && c.outcome == .succeeded)
    }
}
