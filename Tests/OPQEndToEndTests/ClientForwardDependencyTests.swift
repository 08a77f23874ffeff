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

    /// A restarted coordinator gives the reservations it recovered a full lease, and the live program
    /// renews them through the new instance: longer than a lease after the restart, the dependant still
    /// waits (not cancelled under `requires: .success`), and runs once the awaited operation is added.
    @Test func aLiveProgramKeepsItsReservationsThroughACoordinatorRestart() throws {
        let lease = ["--reservation-lease", "5"]
        let live = try ClientCluster(workers: [1], coordinatorArguments: lease)
        defer { live.stop() }
        let queue = live.queue()
        let file = live.path("log")
        let later = RemoteOperation(command: Script.append("later", to: file))
        let waiting = RemoteOperation(command: Script.append("waiting", to: file))
        waiting.requires = .success
        try waiting.addDependency(later)
        try queue.addOperation(waiting)
        live.cluster.killCoordinator()
        try live.cluster.startCoordinator(lease)
        let client = try CoordinatorClient(endpoint: live.cluster.clientsEndpoint)
        #expect(try client.wait(for: .operation(try #require(waiting.id)), timeout: 7) == .timedOut, "given up after the restart")
        try queue.addOperation(later)
        // Seen through this connection's event stream, which asked the new instance for its watch.
        live.finish(waiting)
        live.finish(later)
        #expect(waiting.outcome == .succeeded && later.outcome == .succeeded)
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

    /// A reservation that ended while its program still holds it (given up by another client's cancel of
    /// `op-rN` here; in general, its lease ran out while the program was stopped) does not break the
    /// program: the operation, added later, takes nothing up and runs; a dependency made on an operation
    /// whose reservation ended waits on a fresh one.
    @Test func aReservationGivenUpUnderItsProgramLeavesTheProgramWorking() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        let file = live.path("log")
        let client = try CoordinatorClient(endpoint: live.cluster.clientsEndpoint)
        func giveUpTheReservation(awaitedBy dependant: RemoteOperation) throws {
            let blockers = try client.operation(try #require(dependant.id)).blockers.flatMap(\.operations)
            _ = try client.cancel(.operation(try #require(blockers.first { $0.isReservation }, "\(blockers)")))
            live.finish(dependant)  // as if the awaited operation finished cancelled
        }
        // Added later, the operation whose reservation ended is accepted (it carried that reservation).
        let first = RemoteOperation(command: Script.append("first", to: file))
        let early = RemoteOperation(command: Script.append("early", to: file))
        try early.addDependency(first)
        try queue.addOperation(early)
        try giveUpTheReservation(awaitedBy: early)
        try queue.addOperation(first)
        live.finish(first)
        // A new dependant of one whose reservation ended waits on a fresh reservation, taken up when it is added.
        let second = RemoteOperation(command: Script.append("second", to: file))
        let before = RemoteOperation(command: Script.append("before", to: file))
        try before.addDependency(second)
        try queue.addOperation(before)
        try giveUpTheReservation(awaitedBy: before)
        let late = RemoteOperation(command: Script.append("late", to: file))
        try late.addDependency(second)
        try queue.addOperation(late)
        #expect(late.state == .pending)
        try queue.addOperation(second)
        live.finish(late)
        #expect(Evidence.lines(file) == ["early", "first", "before", "second", "late"])
        #expect([first, early, second, before, late].allSatisfy { $0.outcome == .succeeded })
    }

    /// A program killed with SIGKILL cannot give its reservations up; their lease runs out instead. Here
    /// the real example program (`opq-example-forward-dependency`) adds "report", which waits for an
    /// operation it never adds, and another client depends on that reservation with `requires: success`.
    /// While the program lives it renews the lease (the reservation outlives it); once killed, the
    /// coordinator gives the reservation up: the other client's dependant ends cancelled and "report" runs.
    @Test func aKilledProgramsReservationsAreGivenUpWhenTheirLeaseRunsOut() throws {
        let lease = 5.0  // renewed every 1.7 s: a busy machine may starve the program for 3 s without losing it
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(["--reservation-lease", "\(lease)"])
        try cluster.startWorker("w1")
        let program = try ChildProcess(
            BuiltProducts.path("opq-example-forward-dependency"), ["--clients", cluster.clientsEndpoint], name: "program",
            environment: TestCluster.environment(cluster.directory), stdinPipe: true, stdout: .capture)
        defer { program.kill() }
        #expect(program.waitForOutput("waits for data", within: 60), "the program did not add its operation: \(program.tail())")
        let line = try #require(program.output.split(separator: "\n").first { $0.hasSuffix("waits for data") })
        let report = try #require(OperationID(parsing: String(line.split(separator: " ")[1])))

        let client = try CoordinatorClient(endpoint: cluster.clientsEndpoint)
        let blockers = try client.operation(report).blockers.flatMap(\.operations)
        let reservation = try #require(blockers.first { $0.isReservation }, "report waits on a reservation: \(blockers)")
        let strict = try client.submit(Submission([
            OperationSpec(name: "strict", work: .command(Command(["true"])), dependencies: [.id(reservation)], requires: .success),
        ])).operations[0]

        // Longer than the lease: the live program renews it, so nothing moves.
        #expect(try client.wait(for: .operation(strict), timeout: lease + 1) == .timedOut, "given up while its program lives")
        #expect(try client.operation(report).state == .pending)

        // SIGKILL alone: kill() would close its standard input first, and at end of input it adds "data".
        program.signal(SIGKILL)
        #expect(program.waitForExit(within: 30) != nil)
        #expect(try client.wait(for: .operation(strict), timeout: 60) == .finished, "\(cluster.logs)")
        #expect(try client.operation(strict).outcome == .cancelled)
        #expect(try client.wait(for: .operation(report), timeout: 60) == .finished, "\(cluster.logs)")
        #expect(try client.operation(report).outcome == .succeeded)
    }
}
