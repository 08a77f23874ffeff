import Foundation
import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// The client's event stream against a scripted coordinator (a ROUTER socket in the test), for what a
/// real coordinator does only under load: a gap in the event sequence.
@Suite(.serialized) struct ClientStreamTests {
    @Test func aGapInTheEventSequenceResubscribesFromTheLastEventApplied() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        let (router, endpoint) = (scripted.router, scripted.endpoint)

        // The client connects (on another thread: its init waits for the snapshot).
        let connected = Counter()
        let box = CoordinatorBox()
        Thread {
            box.coordinator = try? RemoteCoordinator(endpoint: endpoint, timeout: 20)
            connected.bump("connected")
        }.start()
        let (identity, first) = try #require(try receive(router))
        #expect(first.watch.all == Opq_V1_All() && !first.watch.hasResumeAfter)
        try send(router, identity, .reply(first.requestID) { $0.watching.resumed = false })
        try send(router, identity, .with { $0.snapshot.watch = first.requestID; $0.snapshot.sequence = 5 })
        #expect(connected.wait(within: 20) { $0["connected", default: 0] == 1 } && box.coordinator != nil)
        defer { box.coordinator?.close() }

        // Event 6 follows 5; the next batch says it follows 8: events 7 and 8 were lost.
        try send(router, identity, events(watch: first.requestID, previous: 5, sequences: [6]))
        try send(router, identity, events(watch: first.requestID, previous: 8, sequences: [9]))
        let (_, unwatch) = try #require(try receive(router))
        #expect(unwatch.unwatch.watch == first.requestID, "the old stream is ended")
        let (_, second) = try #require(try receive(router))
        #expect(second.watch.all == Opq_V1_All())
        #expect(second.watch.hasResumeAfter && second.watch.resumeAfter == 6, "resumes after the last event applied")
    }

    @Test func aSubmitThatTimesOutIsSentAgainWithTheSameIdempotencyKey() throws {
        let scripted = try ScriptedRouter()
        defer { scripted.close() }
        let (router, endpoint) = (scripted.router, scripted.endpoint)

        let progress = Counter()
        let box = CoordinatorBox()
        let operation = RemoteOperation(command: ["true"])
        Thread {
            // A 1-second request timeout, so the first submit times out quickly.
            guard let coordinator = try? RemoteCoordinator(endpoint: endpoint, timeout: 1) else { return }
            box.coordinator = coordinator
            progress.bump("connected")
            do {
                try RemoteOperationQueue(name: "retry", coordinator: coordinator).addOperation(operation)
                progress.bump("added")
            } catch {
                progress.bump("failed")
            }
        }.start()
        let (identity, watch) = try #require(try receive(router))
        try send(router, identity, .reply(watch.requestID) { $0.watching.resumed = false })
        try send(router, identity, .with { $0.snapshot.watch = watch.requestID; $0.snapshot.sequence = 1 })
        #expect(progress.wait(within: 20) { $0["connected", default: 0] == 1 })
        defer { box.coordinator?.close() }

        // The first submit gets no answer (a coordinator restarting, say); the second is the same batch.
        let (_, first) = try #require(try receive(router))
        let (_, second) = try #require(try receive(router))
        #expect(first.submit.idempotencyKey.hasPrefix("opq-client-"))
        #expect(second.submit.idempotencyKey == first.submit.idempotencyKey)
        #expect(second.submit.operations.count == 1 && second.requestID != first.requestID)
        try send(router, identity, .reply(second.requestID) {
            $0.submitted.job = 4
            $0.submitted.operations = [17]
        })
        #expect(progress.wait(within: 20) { $0["added", default: 0] == 1 })
        #expect(operation.id == OperationID(17))
    }

    private func events(watch: UInt64, previous: UInt64, sequences: [UInt64]) -> Opq_V1_CoordinatorToClient {
        .with {
            $0.events.watch = watch
            $0.events.previous = previous
            $0.events.items = sequences.map { sequence in
                .with {
                    $0.sequence = sequence
                    $0.jobFinished = sequence
                }
            }
        }
    }

    private func send(_ router: Socket, _ identity: [UInt8], _ message: Opq_V1_CoordinatorToClient) throws {
        _ = try router.send(try Frames.encode(message, to: identity))
    }

    /// The next request the client sends, within 20 seconds.
    private func receive(_ router: Socket) throws -> (identity: [UInt8], request: Opq_V1_ClientRequest)? {
        var poller = Poller()
        try poller.add(router)
        guard try poller.poll(timeout: 20_000) > 0, let frames = try router.receiveMultipart(flags: .dontWait) else { return nil }
        let (identity, request, _) = try Frames.decodeRouted(frames, as: Opq_V1_ClientRequest.self)
        return (identity, request)
    }
}

/// The scripted coordinator's ROUTER socket, bound on ipc:// in a fresh directory; ``close()`` removes it.
struct ScriptedRouter {
    let directory: URL
    let context: Context
    let router: Socket
    let endpoint: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-scripted-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        context = try Context()
        router = try context.socket(.router)
        try router.set(.linger, 0)
        endpoint = try router.bind("ipc://\(directory.path)/clients.sock")
    }

    func close() {
        router.close()
        context.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

private final class CoordinatorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: RemoteCoordinator?

    var coordinator: RemoteCoordinator? {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
