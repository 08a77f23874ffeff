import Foundation
import OPQClient
import OPQCore
import Testing

/// The `async` forms: nothing here blocks a thread of the cooperative pool while it waits.
@Suite(.serialized) struct ClientAsyncTests {
    @Test func awaitingAnOperationAndItsEvents() async throws {
        let live = try await ClientCluster.start(workers: [1])
        defer { live.stop() }
        let coordinator = live.coordinator
        let everything = coordinator.events()
        let queue = RemoteOperationQueue(name: "async", coordinator: coordinator)
        let operation = RemoteOperation(command: ["/bin/sh", "-c", "exit 3"])
        let states = operation.events
        try await queue.addOperation(operation)
        let outcome = try await withTimeout(seconds: 60) { try await operation.finished }
        #expect(outcome == .failed && operation.exitStatus == 3 && operation.finishReason == .exitStatus)

        var seen: [OperationState] = []
        for await event in states { if case .stateChanged(let change) = event { seen.append(change.state) } }
        #expect(seen.last == .finished && seen.contains(.executing), "seen: \(seen)")

        let job = operation.job
        let jobFinished = try await withTimeout(seconds: 30) {
            for await event in everything { if case .jobFinished(job) = event { return true } }
            return false
        }
        #expect(jobFinished)
    }

    @Test func awaitingABatchAndAQueue() async throws {
        let live = try await ClientCluster.start(workers: [2])
        defer { live.stop() }
        let queue = live.queue("batch")
        let first = RemoteOperation(command: ["true"])
        let second = RemoteOperation(command: ["true"])
        try second.addDependency(first)
        try await withTimeout(seconds: 60) { try await queue.addOperations([first, second], waitUntilFinished: true) }
        #expect(first.outcome == .succeeded && second.outcome == .succeeded)
        let third = RemoteOperation(command: ["true"])
        try await queue.addOperation(third)
        try await withTimeout(seconds: 60) { try await queue.allOperationsFinished() }
        #expect(third.isFinished)
        #expect(try await queue.status().counts.succeeded == 3)
    }

    @Test func closingTheConnectionEndsAwaitsWithAnError() async throws {
        let live = try await ClientCluster.start(workers: [])  // no worker: the operation never runs
        defer { live.stop() }
        let coordinator = live.coordinator
        let queue = live.queue("stuck")
        let operation = RemoteOperation(command: ["true"])
        try await queue.addOperation(operation)
        coordinator.close()
        await #expect(throws: ClientError.self) { _ = try await operation.finished }
    }
}

/// Runs a blocking wait (`Counter.wait`, `Trace.wait`) on a thread of its own. An async test that blocks
/// a thread of the cooperative pool — two threads on two cores — while it waits for something one of its
/// own tasks must do can starve that task (other suites block the other thread) until the wait times out.
func offPool<T: Sendable>(_ wait: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: wait()) }
    }
}

/// Runs `body`, failing with a timeout error if it takes longer than `seconds`.
func withTimeout<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Deadline.expire(after: seconds)
            throw TimeoutError(seconds: seconds)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// A deadline for `withTimeout`: returns after `seconds`, or throws `CancellationError` at once when
/// its task is cancelled (the body finished first). A Dispatch timer, resumed exactly once.
enum Deadline {
    static func expire(after seconds: Double) async throws {
        let once = ResumeOnce()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                once.arm(continuation)
                DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { once.resume(with: .success(())) }
            }
        } onCancel: {
            once.resume(with: .failure(CancellationError()))
        }
    }

    private final class ResumeOnce: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<Void, Error>?
        private var early: Result<Void, Error>?

        func arm(_ continuation: CheckedContinuation<Void, Error>) {
            let ready: Result<Void, Error>? = lock.withLock {
                if let early { return early }
                self.continuation = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }

        func resume(with result: Result<Void, Error>) {
            let waiting: CheckedContinuation<Void, Error>? = lock.withLock {
                defer { continuation = nil }
                if continuation == nil && early == nil { early = result }
                return continuation
            }
            waiting?.resume(with: result)
        }
    }
}

struct TimeoutError: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "did not complete within \(seconds) s" }
}
