import Foundation
import OPQCore

/// One attempt of one operation: what the coordinator dispatches, cancels and hears back about.
public struct AttemptKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The operation.
    public var operation: OperationID
    /// The attempt number (1 = first dispatch), as in ``OPQCore/Effect/dispatch(_:attempt:worker:)``.
    public var attempt: Int

    /// Creates a key.
    public init(_ operation: OperationID, attempt: Int) {
        self.operation = operation
        self.attempt = attempt
    }

    public static func < (lhs: AttemptKey, rhs: AttemptKey) -> Bool {
        (lhs.operation, lhs.attempt) < (rhs.operation, rhs.attempt)
    }

    public var description: String { "\(operation)#\(attempt)" }
}

/// What the coordinator asks a worker to run: one attempt of one operation.
public struct RunRequest: Sendable {
    /// Which attempt this is.
    public var key: AttemptKey
    /// The operation's name (for logs and `Operation.name`).
    public var name: String
    /// The queue it was dispatched for (a handler's ``HandlerContext/queueName``); empty if unknown.
    public var queue: String
    /// What to run.
    public var work: Work
    /// How to run it: the niceness of its processes (SEMANTICS §4).
    public var qualityOfService: OPQCore.QualityOfService
    /// Seconds the attempt may execute before it is killed and fails with reason `timeout`; nil = no limit.
    public var timeout: Double?
    /// Seconds between SIGTERM and SIGKILL when a command's process group is killed (SEMANTICS §5).
    public var killGracePeriod: Double
    /// How its explicit dependencies finished, with their results (a handler's ``HandlerContext/dependencies``).
    public var dependencies: [DependencyOutcome] = []

    /// The default grace period between SIGTERM and SIGKILL: 10 seconds.
    public static let defaultKillGracePeriod = 10.0

    /// Creates a request.
    public init(
        _ key: AttemptKey, name: String = "", queue: String = "", work: Work,
        qualityOfService: OPQCore.QualityOfService = .default, timeout: Double? = nil,
        killGracePeriod: Double = RunRequest.defaultKillGracePeriod
    ) {
        self.key = key
        self.name = name
        self.queue = queue
        self.work = work
        self.qualityOfService = qualityOfService
        self.timeout = timeout
        self.killGracePeriod = killGracePeriod
    }
}

/// How one attempt ended, as the worker reports it to the coordinator.
public struct Completion: Hashable, Sendable {
    /// Which attempt.
    public var key: AttemptKey
    /// The verdict: status, reason, exit code, signal.
    public var report: AttemptReport
    /// When it started executing; nil if it never did (cancelled or handed back while queued).
    public var startedAt: Date?
    /// When it ended.
    public var endedAt: Date
    /// The last 64 KiB of its standard output (of all its commands, in command order).
    public var stdout: [UInt8]
    /// The last 64 KiB of its standard error; also holds the worker's own error message when it could
    /// not run the work (program not found, unknown handler, handler error).
    public var stderr: [UInt8]
    /// A handler's result bytes; empty for commands.
    public var result: [UInt8]
    /// A one-line explanation when the attempt did not succeed, e.g. `exit status 3`.
    public var message: String?
    /// True when the worker stopped the attempt because it is shutting down: the coordinator should give
    /// the operation a new attempt elsewhere instead of finishing it `cancelled`.
    public var handedBack: Bool

    /// Creates a completion.
    public init(
        key: AttemptKey, report: AttemptReport, startedAt: Date?, endedAt: Date,
        stdout: [UInt8] = [], stderr: [UInt8] = [], result: [UInt8] = [], message: String? = nil,
        handedBack: Bool = false
    ) {
        self.key = key
        self.report = report
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.stdout = stdout
        self.stderr = stderr
        self.result = result
        self.message = message
        self.handedBack = handedBack
    }
}

/// A piece of a command's output, streamed to the coordinator before the attempt's `finished` (only when
/// the runner has an ``OutputWindow``; the `finished` still carries the tails).
public struct OutputChunk: Hashable, Sendable {
    /// Which stream.
    public enum Stream: Hashable, Sendable {
        case stdout
        case stderr
    }

    /// Which stream the bytes belong to.
    public var stream: Stream
    /// Offset of the first byte in the attempt's stream (all its commands' output, as it came).
    public var offset: UInt64
    /// The bytes (at most one pipe read: 64 KiB).
    public var bytes: [UInt8]

    /// Creates a chunk.
    public init(_ stream: Stream, offset: UInt64, bytes: [UInt8]) {
        self.stream = stream
        self.offset = offset
        self.bytes = bytes
    }
}

/// What a worker's runner tells its connection, in order for each attempt:
/// `started` (unless it never ran), any `progress` and `output`, then exactly one `finished`.
public enum AttemptEvent: Hashable, Sendable {
    /// The attempt began executing (its process was about to be spawned, its handler about to run).
    case started(AttemptKey, at: Date)
    /// A handler reported progress: `fraction` in 0…1, with an optional message.
    case progress(AttemptKey, fraction: Double, message: String?)
    /// The attempt ended; the runner no longer holds it.
    case finished(Completion)
    /// A command of the attempt wrote output (its room in the ``OutputWindow`` is already taken).
    case output(AttemptKey, OutputChunk)

    /// The attempt this event is about.
    public var key: AttemptKey {
        switch self {
        case .started(let key, _), .progress(let key, _, _), .output(let key, _): key
        case .finished(let completion): completion.key
        }
    }
}

/// Where a runner delivers its events. Called from many threads at once: it must be thread-safe and
/// quick (the socket thread's inproc `PUSH`, or a lock-protected array in tests).
public typealias AttemptEventSink = @Sendable (AttemptEvent) -> Void
