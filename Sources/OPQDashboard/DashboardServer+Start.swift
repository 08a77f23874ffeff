import Foundation
import Logging
import OPQCoordinator

extension DashboardServer {
    /// Seconds to wait for the HTTP port to be bound at start.
    static let startDeadline = 30.0

    /// A server running on its own task.
    public struct Running: Sendable {
        /// The port as bound.
        public let port: Int
        /// The server's task; cancel it to stop serving.
        public let task: Task<Void, Never>
        /// `http://HOST:PORT`.
        public let url: String
    }

    /// Starts serving on a task of its own and returns once the port is bound, for a synchronous
    /// executable (the coordinator's loop keeps its own thread). Throws when the address cannot be bound.
    public func start() throws -> Running {
        let state = StartState()
        let task = Task {
            do {
                try await run { port in state.finish(.success(port)) }
            } catch {
                state.finish(.failure(error))
            }
        }
        switch state.wait(within: Self.startDeadline) {
        case .success(let port):
            let host = address.host.contains(":") ? "[\(address.host)]" : address.host
            return Running(port: port, task: task, url: "http://\(host):\(port)")
        case .failure(let error):
            task.cancel()
            throw HTTPAddressError(description: "cannot serve HTTP on \(address): \(error). Choose another port, or port 0 for any free one.")
        case nil:
            task.cancel()
            throw HTTPAddressError(description: "the HTTP server on \(address) did not start within \(Self.startDeadline) s")
        }
    }
}

/// The outcome of a start, handed from the server's task to the thread waiting in `start()`.
// @unchecked Sendable: `result` is set and read only under `condition`.
private final class StartState: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<Int, any Error>?

    func finish(_ outcome: Result<Int, any Error>) {
        condition.lock()
        if result == nil { result = outcome }
        condition.broadcast()
        condition.unlock()
    }

    func wait(within seconds: Double) -> Result<Int, any Error>? {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while result == nil, condition.wait(until: deadline) {}
        return result
    }
}
