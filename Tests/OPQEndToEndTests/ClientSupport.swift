import Foundation
import OPQClient
import OPQCore
import Testing

/// A live cluster (real `opq-coordinator` and `opq-worker` processes) and a ``RemoteCoordinator``
/// connected to it; everything is stopped by ``stop()`` (call it in a `defer`).
final class ClientCluster: @unchecked Sendable {
    let cluster: TestCluster
    let coordinator: RemoteCoordinator

    /// Starts a coordinator (with `coordinatorArguments`) and one worker per entry of `workers` (its slot count).
    convenience init(workers: [Int] = [1], coordinatorArguments: [String] = []) throws {
        let cluster = try Self.launch(workers: workers, coordinatorArguments: coordinatorArguments)
        do {
            self.init(cluster, try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20))
        } catch {
            cluster.stop()
            throw error
        }
    }

    /// The `async` form: connects without blocking a thread of the cooperative pool.
    static func start(workers: [Int] = [1]) async throws -> ClientCluster {
        let cluster = try launch(workers: workers)
        do {
            return ClientCluster(cluster, try await RemoteCoordinator.connect(endpoint: cluster.clientsEndpoint, timeout: 20))
        } catch {
            cluster.stop()
            throw error
        }
    }

    private init(_ cluster: TestCluster, _ coordinator: RemoteCoordinator) {
        self.cluster = cluster
        self.coordinator = coordinator
    }

    private static func launch(workers: [Int], coordinatorArguments: [String] = []) throws -> TestCluster {
        let cluster = try TestCluster()
        do {
            try cluster.startCoordinator(coordinatorArguments)
            for (k, slots) in workers.enumerated() { try cluster.startWorker("w\(k + 1)", slots: slots) }
        } catch {
            cluster.stop()
            throw error
        }
        return cluster
    }

    /// A queue of the cluster's coordinator.
    func queue(_ name: String = "default") -> RemoteOperationQueue { RemoteOperationQueue(name: name, coordinator: coordinator) }

    /// A path in the cluster's temporary directory.
    func path(_ name: String) -> String { cluster.path(name) }

    /// Waits (bounded) until `operation` finished; records a failure with the cluster's logs if not.
    func finish(_ operation: RemoteOperation, within seconds: Double = 60) {
        let done = operation.waitUntilFinished(timeout: seconds)
        #expect(done, "\(operation) did not finish within \(seconds) s\n\(cluster.logs)")
    }

    /// Waits (bounded) until `queue` has nothing unfinished.
    func drain(_ queue: RemoteOperationQueue, within seconds: Double = 60) throws {
        let done = try queue.waitUntilAllOperationsAreFinished(timeout: seconds)
        #expect(done, "\(queue) did not finish within \(seconds) s\n\(cluster.logs)")
    }

    func stop() {
        coordinator.close()
        cluster.stop()
    }
}

/// A counter that several threads bump, with a bounded wait for a value.
final class Counter: @unchecked Sendable {
    private let condition = NSCondition()
    private var counts: [String: Int] = [:]

    func bump(_ key: String) {
        condition.withLock {
            counts[key, default: 0] += 1
            condition.broadcast()
        }
    }

    subscript(key: String) -> Int { condition.withLock { counts[key, default: 0] } }

    /// Waits up to `seconds` until `predicate` holds for the counts; returns whether it did.
    func wait(within seconds: Double, until predicate: ([String: Int]) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        return condition.withLock {
            while !predicate(counts) {
                if !condition.wait(until: deadline) { return predicate(counts) }
            }
            return true
        }
    }
}

/// Shell commands for the client tests.
enum Script {
    /// Appends `name` to `file`.
    static func append(_ name: String, to file: String) -> [String] {
        ["/bin/sh", "-c", "echo \"$0\" >> \"$1\"", name, file]
    }

    /// Creates `mine`, then waits (at most `seconds`) until `other` exists; fails if it never does.
    static func meet(_ mine: String, _ other: String, seconds: Int = 20) -> [String] {
        ["/bin/sh", "-c", "touch \"$0\"; i=0; while [ ! -e \"$1\" ]; do i=$((i+1)); [ $i -gt $(($2 * 20)) ] && exit 1; sleep 0.05; done",
         mine, other, String(seconds)]
    }

    /// Says "up" on the fifo `started`, then blocks until a line can be read from the fifo `release`,
    /// then appends `name` to `file`.
    static func block(started: Signal, release: Signal, then name: String, to file: String) -> [String] {
        // Opens the release pipe read-write first (never blocks), so the test can write to it once "up" came.
        ["/bin/sh", "-c", "exec 3<>\"$0\"; echo up > \"$1\"; read line <&3; echo \"$2\" >> \"$3\"",
         release.path, started.path, name, file]
    }
}

extension Signal {
    /// Lets a ``Script/block(started:release:then:to:)`` command go on (after it said "up").
    func release() {
        let writer = open(path, O_WRONLY | O_NONBLOCK)
        guard writer >= 0 else { return }
        _ = write(writer, "go\n", 3)
        close(writer)
    }
}
