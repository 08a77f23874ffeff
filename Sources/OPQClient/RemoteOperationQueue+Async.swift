import Foundation
import OPQCore

// The `async` forms of the calls that wait for the coordinator. They never block a thread of Swift's
// cooperative pool: the short round trips run on a Dispatch thread, the long waits are replies and
// events the connection's own thread delivers.

extension RemoteOperationQueue {
    /// `async` form of ``addOperation(_:)``.
    public func addOperation(_ operation: RemoteOperation) async throws(ClientError) {
        try await offload { () throws(ClientError) in try self.addOperation(operation) }
    }

    /// `async` form of ``addOperations(_:waitUntilFinished:)``: with `wait`, returns when all have finished.
    public func addOperations(_ operations: [RemoteOperation], waitUntilFinished wait: Bool) async throws(ClientError) {
        try await offload { () throws(ClientError) in try self.addOperations(operations, waitUntilFinished: false) }
        if wait {
            for operation in operations {
                do { _ = try await operation.finished } catch { throw (error as? ClientError) ?? .closed(endpoint: coordinator.endpoint) }
            }
        }
    }

    /// `async` form of ``cancelAllOperations()``.
    public func cancelAllOperations() async throws(ClientError) {
        try await offload { () throws(ClientError) in try self.cancelAllOperations() }
    }

    /// `async` form of ``status()``.
    public func status() async throws(ClientError) -> QueueStatus {
        try await offload { () throws(ClientError) in try self.status() }
    }
}

extension RemoteCoordinator {
    /// `async` form of ``init(endpoint:security:timeout:)``.
    public static func connect(endpoint: String, security: ConnectionSecurity = .none, timeout: Double = 10) async throws(ClientError) -> RemoteCoordinator {
        try await offload { () throws(ClientError) in try RemoteCoordinator(endpoint: endpoint, security: security, timeout: timeout) }
    }
}

/// Runs a blocking call on a Dispatch thread and suspends until it returns.
func offload<T: Sendable>(_ work: @escaping @Sendable () throws(ClientError) -> T) async throws(ClientError) -> T {
    let result: Result<T, ClientError> = await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: Result { () throws(ClientError) -> T in try work() }) }
    }
    return try result.get()
}
