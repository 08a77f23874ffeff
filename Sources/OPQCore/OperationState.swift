/// The observable lifecycle of an operation (SEMANTICS §2), in order.
public enum OperationState: UInt8, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// Accepted; some dependency has not finished (or a retry's backoff is running).
    case pending
    /// All dependencies finished; waiting for its queue's turn and a free worker slot.
    case ready
    /// Sent to a worker, which has not yet reported it started.
    case dispatched
    /// Running on a worker.
    case executing
    /// Terminal, with an outcome.
    case finished

    public static func < (lhs: OperationState, rhs: OperationState) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .pending: "pending"
        case .ready: "ready"
        case .dispatched: "dispatched"
        case .executing: "executing"
        case .finished: "finished"
        }
    }
}

/// How a finished operation ended.
public enum Outcome: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case succeeded, failed, cancelled

    public var description: String {
        switch self {
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }
}

/// Why an attempt or an operation ended the way it did.
public enum FinishReason: UInt8, Sendable, CustomStringConvertible {
    /// The work completed (exit status 0 / handler returned).
    case completed
    /// A command exited with a non-zero status.
    case exitStatus
    /// A command was killed by a signal it was not sent by opq.
    case signal
    /// A handler threw, or the worker could not start the work.
    case error
    /// The attempt ran longer than the operation's `timeout`.
    case timeout
    /// The operation lost its worker `maxLostWorkers` times.
    case lostWorker
    /// A cancel request took effect.
    case cancelRequested
    /// A dependency failed or was cancelled and the operation `requires: success`.
    case dependencyFailed
    /// Its outputs were newer than its inputs, so the worker did not run it (job files' `outputs:`).
    case upToDate

    public var description: String {
        switch self {
        case .completed: "completed"
        case .exitStatus: "exit status"
        case .signal: "signal"
        case .error: "error"
        case .timeout: "timeout"
        case .lostWorker: "lost worker"
        case .cancelRequested: "cancel requested"
        case .dependencyFailed: "dependency failed"
        case .upToDate: "up to date"
        }
    }
}

/// What a worker reports when an attempt ends.
public struct AttemptReport: Hashable, Sendable {
    /// The worker's verdict on the attempt.
    public enum Status: UInt8, Sendable {
        /// Completed successfully.
        case succeeded
        /// Failed (non-zero exit, signal, handler error).
        case failed
        /// Stopped because opq asked it to stop (cancel or timeout kill).
        case cancelled
    }

    /// The worker's verdict.
    public var status: Status
    /// Why, in more detail.
    public var reason: FinishReason
    /// A command's exit status, when it exited.
    public var exitCode: Int32?
    /// The signal that ended a command, when one did.
    public var signal: Int32?

    /// Creates a report.
    public init(_ status: Status, reason: FinishReason? = nil, exitCode: Int32? = nil, signal: Int32? = nil) {
        self.status = status
        self.reason = reason ?? (status == .succeeded ? .completed : status == .cancelled ? .cancelRequested : .error)
        self.exitCode = exitCode
        self.signal = signal
    }

    /// A successful attempt.
    public static let succeeded = AttemptReport(.succeeded, exitCode: 0)

    /// A command that exited with `code` (0 = success).
    public static func exited(_ code: Int32) -> AttemptReport {
        code == 0 ? .succeeded : AttemptReport(.failed, reason: .exitStatus, exitCode: code)
    }
}
