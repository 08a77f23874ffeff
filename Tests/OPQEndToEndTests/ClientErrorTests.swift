import Foundation
import OPQClient
import OPQCore
import Testing

/// Misuse that Foundation answers with an abort or a hang: thrown Swift errors, nothing changed.
@Suite(.serialized) struct ClientErrorTests {
    @Test func addingAnOperationTwiceThrowsAndAddsNothing() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        let operation = try queue.addOperation(command: ["true"])
        #expect(throws: ClientError.self) { try queue.addOperation(operation) }
        #expect(throws: ClientError.self) { try live.queue("other").addOperations([RemoteOperation(), operation], waitUntilFinished: false) }
        live.finish(operation)
        #expect(try queue.status().counts.total == 1)
        #expect(try live.queue("other").status().counts.total == 0, "a refused batch adds none of its operations")
    }

    @Test func aDependencyCycleIsRefusedNamingItsMembers() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        try queue.setSuspended(true)
        let a = RemoteOperation(command: ["true"])
        let b = RemoteOperation(command: ["true"])
        try b.addDependency(a)
        try queue.addOperations([a, b], waitUntilFinished: false)
        do {
            try a.addDependency(b)
            Issue.record("a cycle was accepted")
        } catch {
            let refusal = try #require(error.refusal)
            #expect(refusal.code == .cycle)
            #expect(Set(refusal.cycleOperations) == [a.id!.rawValue, b.id!.rawValue])
            #expect("\(error)".contains("dependency cycle"))
        }
        #expect(a.dependencies.isEmpty, "nothing changed")
        // Within one batch the cycle names the operations by name.
        let x = RemoteOperation(command: ["true"])
        let y = RemoteOperation(command: ["true"])
        x.name = "x"
        y.name = "y"
        try x.addDependency(y)
        try y.addDependency(x)
        #expect {
            try queue.addOperations([x, y], waitUntilFinished: false)
        } throws: { error in
            (error as? ClientError)?.refusal?.cycleNames.sorted() == ["x", "y"]
        }
        #expect(x.id == nil && y.id == nil)
        try queue.setMaxConcurrentOperationCount(-1)
        #expect(throws: ClientError.self) { try queue.setMaxConcurrentOperationCount(-2) }
    }

    @Test func closingACycleThroughAnOperationNotAddedYetThrowsAndChangesNothing() throws {
        let live = try ClientCluster(workers: [1])
        defer { live.stop() }
        let queue = live.queue()
        try queue.setMaxConcurrentOperationCount(1)  // FIFO: a released op2 would run before the probe
        let (op1, op2, op3) = (RemoteOperation(command: ["true"]), RemoteOperation(command: ["true"]), RemoteOperation(command: ["true"]))
        (op1.name, op2.name, op3.name) = ("op1", "op2", "op3")
        try op1.addDependency(op2)
        try op2.addDependency(op3)  // op3 is in no queue yet
        try queue.addOperations([op1, op2], waitUntilFinished: false)
        try op3.addDependency(op1)
        #expect {
            try queue.addOperation(op3)
        } throws: { error in
            (error as? ClientError)?.refusal?.code == .cycle && "\(error)".contains("dependency cycle")
        }
        #expect(op3.id == nil && op3.state == nil, "op3 was not accepted")
        #expect(try queue.status().counts.total == 2, "op3 is not counted")
        let probe = try queue.addOperation(command: ["true"])
        live.finish(probe)
        #expect(op2.state == .pending && op1.state == .pending, "op2 still waits for op3")
        #expect(op2.dependencies == [op3])
        // Once the cycle is broken op3 is added normally and releases op2, then op1.
        try op3.removeDependency(op1)
        try queue.addOperation(op3)
        live.finish(op1)
        #expect(op3.outcome == .succeeded && op2.outcome == .succeeded && op1.outcome == .succeeded)
        #expect(try queue.status().counts.total == 4)
    }

    @Test func waitingForAnOperationNeverAddedReturnsAtOnceInsteadOfCrashingOrHanging() async {
        let operation = RemoteOperation(command: ["true"])
        operation.waitUntilFinished()
        #expect(!operation.isFinished)
        let started = ContinuousClock.now
        #expect(operation.waitUntilFinished(timeout: 60) == false)
        #expect(ContinuousClock.now - started < .seconds(10), "returned at once, not after the timeout")
        await #expect {
            _ = try await operation.finished
        } throws: { error in
            if case .notSubmitted? = error as? ClientError { true } else { false }
        }
    }

    @Test func operationsCompareByIdentityLikeFoundationOperations() {
        let a = RemoteOperation(command: ["true"])
        let b = RemoteOperation(command: ["true"])
        #expect(a == a && a != b)
        #expect(Set([a, b, a]).count == 2)
        #expect([a, b].firstIndex(of: b) == 1)
    }

    @Test func noCoordinatorIsATimeoutNotAHang() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-none-\(UUID().uuidString.prefix(8))")
        #expect {
            _ = try RemoteCoordinator(endpoint: "ipc://\(directory.path)/absent.sock", timeout: 0.5)
        } throws: { error in
            if case .timeout? = error as? ClientError { true } else { false }
        }
    }
}
