import Foundation
import OPQClient
import OPQCore
import OPQWorker
import Testing

/// State seen when it happens (issue 18): another program's cancel of a running operation, made through
/// its own handle (found in `queue.operations`), shows in this program's `isCancelled` and event streams
/// while the operation still runs, and the handler running it sees its `isCancelled` at once.
@Suite(.serialized) struct ClientCancelSeenTests {
    @Test func aCancelThroughAnotherProgramsHandleShowsHereWhileTheOperationStillRuns() async throws {
        let live = try BlockCluster(slots: 1)
        defer { live.stop() }
        let trace = Trace()
        let handler = Counter()
        live.worker.register("watchful") { _ in WatchfulOperation(trace: trace, probe: handler) }
        let operation = RemoteOperation(handler: "watchful")
        let events = operation.events
        let everything = live.coordinator.events()
        let seen = Task { () -> (executing: Bool, cancelledWhileExecuting: Bool) in
            var executing = false
            for await event in events {
                guard case .stateChanged(let change) = event else { continue }
                if change.state == .executing, !change.isCancelled { executing = true; trace.append("executing seen") }
                if change.isCancelled { return (executing, change.state == .executing) }
                if change.state == .finished { break }
            }
            return (executing, false)
        }
        defer { seen.cancel() }
        let queue = live.queue("seen")
        try await queue.addOperation(operation)
        let id = try #require(operation.id)
        let global = Task { () -> Bool in
            for await event in everything {
                if case .stateChanged(let change) = event, change.operation == id, change.isCancelled { return change.state != .finished }
            }
            return false
        }
        defer { global.cancel() }
        #expect(await offPool { trace.wait(for: "executing seen", within: 60) }, "isExecuting as soon as the worker started it\n\(live.cluster.logs)")
        #expect(operation.isExecuting && !operation.isCancelled)

        // Another program: its own connection, the operation's handle from the queue's listing.
        let other = try await RemoteCoordinator.connect(endpoint: live.cluster.clientsEndpoint, timeout: 20)
        defer { other.close() }
        let handles = RemoteOperationQueue(name: "seen", coordinator: other).operations
        let handle = try #require(handles.first { $0.id == id }, "the other program lists it")
        #expect(handle !== operation && handle.isExecuting)
        handle.cancel()
        #expect(handle.isCancelled, "at once in the program that cancelled")

        let (executing, cancelledWhileExecuting) = try await withTimeout(seconds: 30) { await seen.value }
        #expect(executing && cancelledWhileExecuting, "this program saw the cancel before the finish")
        #expect(try await withTimeout(seconds: 30) { await global.value }, "coordinator.events() carries it too")
        #expect(operation.isCancelled && operation.isExecuting && !operation.isFinished)
        #expect(await offPool { handler.wait(within: 30) { $0["saw cancel"] == 1 } }, "the handler saw isCancelled while running")

        trace.append("release")
        live.finish(operation)
        #expect(operation.isCancelled && operation.outcome == .cancelled)
        #expect(await offPool { handle.waitUntilFinished(timeout: 30) } && handle.outcome == .cancelled)
    }
}

/// A handler that waits until its `isCancelled` turns true (reported to `probe`), then until the test
/// releases it, so the test looks at the client while the operation is still executing.
final class WatchfulOperation: Operation, @unchecked Sendable {
    let trace: Trace
    let probe: Counter
    private let wake = DispatchSemaphore(value: 0)

    init(trace: Trace, probe: Counter) {
        self.trace = trace
        self.probe = probe
    }

    override func cancel() {
        super.cancel()
        wake.signal()
    }

    override func main() {
        if !isCancelled { _ = wake.wait(timeout: .now() + 60) }
        if isCancelled { probe.bump("saw cancel") }
        trace.wait(for: "release", within: 60)
    }
}
