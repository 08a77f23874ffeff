import Foundation
import OPQClient
import OPQCore
import OPQWorker
import Testing

/// A handler that records what its context tells it, then runs until the test releases it, whatever
/// `isCancelled` says (so a cancel cannot end it before the test looked).
final class StubbornOperation: Operation, @unchecked Sendable {
    let context: HandlerContext
    let probe: Counter

    init(_ context: HandlerContext, probe: Counter) {
        self.context = context
        self.probe = probe
    }

    override func cancel() {
        super.cancel()
        probe.bump("cancel reached the handler")
    }

    override func main() {
        probe.bump("queue \(context.queueName)")
        probe.bump("name \(context.operationName)")
        probe.bump("started")
        _ = probe.wait(within: 60) { $0["release", default: 0] > 0 }
        if isCancelled { probe.bump("saw cancel") }
    }
}

/// State seen when it happens (Foundation's properties, across clients).
@Suite(.serialized) struct ClientStateTests {
    @Test func anotherClientsCancelOfARunningOperationShowsAtOnceAndTheHandlerKnowsItsQueueAndName() async throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let probe = Counter()
        let worker = try Worker(coordinator: cluster.workersEndpoint, name: "embedded", slots: 1, builtins: false)
        worker.register("stubborn") { context in StubbornOperation(context, probe: probe) }
        worker.start()
        defer {
            probe.bump("release")
            worker.stop(handBack: true)
            #expect((try? worker.waitUntilStopped(timeout: 30)) == true, "the worker stopped")
        }
        let coordinator = try await RemoteCoordinator.connect(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        let other = try await RemoteCoordinator.connect(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { other.close() }

        let operation = RemoteOperation(handler: "stubborn")
        operation.name = "stubborn-1"
        let events = operation.events
        let watcher = Task { () -> (executing: Bool, cancelledWhileRunning: Bool) in
            var executing = false
            for await event in events {
                guard case .stateChanged(let change) = event else { continue }
                if change.state == .executing, !executing {
                    executing = true
                    probe.bump("client saw executing")
                }
                if change.isCancelled || change.state == .finished { return (executing, change.isCancelled && change.state != .finished) }
            }
            return (executing, false)
        }
        defer { watcher.cancel() }
        try await RemoteOperationQueue(name: "state", coordinator: coordinator).addOperation(operation)
        #expect(await offPool { probe.wait(within: 60) { $0["started", default: 0] == 1 } }, "the handler started\n\(cluster.logs)")
        #expect(probe["queue state"] == 1 && probe["name stubborn-1"] == 1, "the handler knows its queue and name")

        #expect(await offPool { probe.wait(within: 30) { $0["client saw executing", default: 0] == 1 } },
                "isExecuting as soon as the worker started it")
        #expect(operation.isExecuting && !operation.isCancelled)
        try await RemoteOperationQueue(name: "state", coordinator: other).cancelAllOperations()
        let seen = try await withTimeout(seconds: 30) { await watcher.value }
        #expect(seen.executing, "executing was reported before the cancel")
        #expect(seen.cancelledWhileRunning, "the cancel showed before the finish")
        #expect(operation.isCancelled && operation.isExecuting && !operation.isFinished)
        // The client hears of the cancel in the turn the coordinator sends the worker its Kill: wait for the
        // Kill to reach the handler before releasing it.
        #expect(await offPool { probe.wait(within: 30) { $0["cancel reached the handler", default: 0] == 1 } })

        probe.bump("release")
        #expect(await offPool { operation.waitUntilFinished(timeout: 30) }, "\(cluster.logs)")
        #expect(probe["saw cancel"] == 1)
    }
}
