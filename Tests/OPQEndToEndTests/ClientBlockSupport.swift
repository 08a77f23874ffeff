import Foundation
import OPQClient
import OPQCore
import OPQWorker
import Testing

/// Foundation's `BlockOperation`, across a coordinator: a live `opq-coordinator` process and one
/// embedded `Worker` of the test process whose handler `block` runs the test's closures (each
/// ``operation(_:_:)`` registers one and names it in the payload). So Foundation's own tests, whose
/// blocks touch the test's variables, port to a remote queue almost line by line.
///
/// Stopped by ``stop()`` (call it in a `defer`): the worker hands back what it holds, the connection
/// closes and the coordinator is killed, also when the test failed.
final class BlockCluster: @unchecked Sendable {
    /// The coordinator (no worker processes) and the connection to it.
    let live: ClientCluster
    let worker: Worker
    private let blocks: BlockTable

    /// Starts a coordinator and an embedded worker with `slots` slots.
    init(slots: Int = 1) throws {
        let table = BlockTable()
        blocks = table
        live = try ClientCluster(workers: [])
        do {
            worker = try Worker(coordinator: live.cluster.workersEndpoint, name: "embedded", slots: slots, builtins: false)
        } catch {
            live.stop()
            throw error
        }
        worker.register("block") { context in
            let body = table[context.payloadText ?? ""]
            return BlockOperation { body?(context) }
        }
        worker.start()
    }

    var cluster: TestCluster { live.cluster }
    var coordinator: RemoteCoordinator { live.coordinator }

    /// An operation whose work is `body`, run by the embedded worker with the handler's context.
    func operation(_ name: String = "", _ body: @escaping @Sendable (HandlerContext) -> Void = { _ in }) -> RemoteOperation {
        let operation = RemoteOperation(handler: "block", text: blocks.add(body))
        operation.name = name
        return operation
    }

    /// The queue `name` of the cluster's coordinator.
    func queue(_ name: String = "default") -> RemoteOperationQueue { live.queue(name) }

    /// Waits (bounded) until `operation` finished; records a failure with the cluster's logs if not.
    func finish(_ operation: RemoteOperation, within seconds: Double = 60) { live.finish(operation, within: seconds) }

    /// Waits (bounded) until `queue` has nothing unfinished.
    func drain(_ queue: RemoteOperationQueue, within seconds: Double = 60) throws { try live.drain(queue, within: seconds) }

    func stop() {
        worker.stop(handBack: true)
        _ = try? worker.waitUntilStopped(timeout: 30)
        live.stop()
    }
}

/// The closures of a ``BlockCluster``, by the key its operations carry as payload.
final class BlockTable: @unchecked Sendable {
    private let lock = NSLock()
    private var blocks: [String: @Sendable (HandlerContext) -> Void] = [:]

    /// Keeps `body`; returns its key.
    func add(_ body: @escaping @Sendable (HandlerContext) -> Void) -> String {
        lock.withLock {
            let key = "block-\(blocks.count + 1)"
            blocks[key] = body
            return key
        }
    }

    subscript(key: String) -> (@Sendable (HandlerContext) -> Void)? { lock.withLock { blocks[key] } }
}

/// What the blocks did, in order (Foundation's tests append to a locked array), with a bounded wait.
final class Trace: @unchecked Sendable {
    private let condition = NSCondition()
    private var entries: [String] = []

    func append(_ entry: String) {
        condition.withLock {
            entries.append(entry)
            condition.broadcast()
        }
    }

    var all: [String] { condition.withLock { entries } }

    func contains(_ entry: String) -> Bool { condition.withLock { entries.contains(entry) } }

    /// Waits up to `seconds` until `entry` was appended; returns whether it was.
    @discardableResult
    func wait(for entry: String, within seconds: Double = 30) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        return condition.withLock {
            while !entries.contains(entry) {
                if !condition.wait(until: deadline) { return entries.contains(entry) }
            }
            return true
        }
    }
}
