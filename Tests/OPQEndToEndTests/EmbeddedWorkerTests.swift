import Foundation
import OPQClient
import OPQCore
import OPQWorker
import Testing

/// A plain Foundation `Operation` registered by the program: reports progress, then either finishes
/// after `steps` steps or, for a payload of "forever", waits until it is cancelled.
final class CountingOperation: Operation, @unchecked Sendable {
    let request: HandlerContext
    let probe: Counter
    private let wake = DispatchSemaphore(value: 0)

    init(_ request: HandlerContext, probe: Counter) {
        self.request = request
        self.probe = probe
    }

    override func cancel() {
        super.cancel()
        wake.signal()
    }

    override func main() {
        guard let text = request.payloadText, let steps = Int(text) else {
            request.reportProgress(fraction: 0.5, message: "waiting")
            probe.bump("waiting")
            // Cooperative: returns once `isCancelled` is set (bounded so a failure cannot hang).
            let deadline = Date(timeIntervalSinceNow: 60)
            while !isCancelled, Date() < deadline { _ = wake.wait(timeout: .now() + 1) }
            if isCancelled { probe.bump("saw cancel") }
            return
        }
        for step in 1...steps where !isCancelled {
            request.reportProgress(fraction: Double(step) / Double(steps), message: "\(step)/\(steps)")
        }
        probe.bump("completed")
    }
}

/// The embedded Worker API: a program serves a coordinator with its own handlers.
@Suite(.serialized) struct EmbeddedWorkerTests {
    @Test func aRegisteredHandlerOperationRunsReportsProgressAndIsCancelledCooperatively() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let probe = Counter()
        let worker = try Worker(coordinator: cluster.workersEndpoint, name: "embedded", slots: 2, builtins: false)
        worker.register("count") { request in CountingOperation(request, probe: probe) }
        worker.start()
        defer {
            worker.stop(handBack: true)
            #expect((try? worker.waitUntilStopped(timeout: 30)) == true, "the worker stopped")
        }
        let coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        let queue = RemoteOperationQueue(name: "embedded", coordinator: coordinator)

        let counted = RemoteOperation(handler: "count", text: "4")
        try queue.addOperation(counted)
        #expect(counted.waitUntilFinished(timeout: 60), "\(cluster.logs)")
        #expect(counted.outcome == .succeeded && counted.worker == "embedded")
        #expect(counted.reportedProgress.fraction == 1 && counted.reportedProgress.message == "4/4")
        #expect(probe["completed"] == 1)

        let endless = RemoteOperation(handler: "count", text: "forever")
        try queue.addOperation(endless)
        #expect(probe.wait(within: 60) { $0["waiting", default: 0] == 1 }, "the handler started\n\(cluster.logs)")
        endless.cancel()
        #expect(endless.waitUntilFinished(timeout: 30))
        #expect(endless.outcome == .cancelled)
        #expect(probe["saw cancel"] == 1, "the operation saw isCancelled and returned early")
        #expect(endless.reportedProgress.fraction == 0.5 && endless.reportedProgress.message == "waiting")
    }
}
