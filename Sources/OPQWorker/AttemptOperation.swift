import Foundation
import OPQCore

/// Why an attempt was asked to stop before it was done.
public enum StopCause: UInt8, Sendable, CustomStringConvertible {
    /// A cancel request (reported `cancelled`, reason `cancelRequested`).
    case cancel
    /// The attempt ran past its timeout (reported `failed`, reason `timeout`).
    case timeout
    /// The worker is shutting down and gives the attempt back (reported `cancelled`, `handedBack`).
    case handBack

    public var description: String {
        switch self {
        case .cancel: "cancel"
        case .timeout: "timeout"
        case .handBack: "hand back"
        }
    }
}

/// What an attempt's work produced: the operation-specific part of a ``Completion``.
public struct AttemptResult: Hashable, Sendable {
    /// The verdict.
    public var report: AttemptReport
    /// Captured standard output (a tail).
    public var stdout: [UInt8]
    /// Captured standard error (a tail), including the worker's own error text.
    public var stderr: [UInt8]
    /// A handler's result bytes.
    public var result: [UInt8]
    /// A one-line explanation when it did not succeed.
    public var message: String?

    /// Creates a result.
    public init(_ report: AttemptReport, stdout: [UInt8] = [], stderr: [UInt8] = [], result: [UInt8] = [], message: String? = nil) {
        self.report = report
        self.stdout = stdout
        self.stderr = stderr
        self.result = result
        self.message = message
    }

    /// A failure of the worker to run the work: reason `error`, with `message` also in stderr.
    public static func error(_ message: String, stdout: [UInt8] = [], stderr: [UInt8] = []) -> AttemptResult {
        AttemptResult(AttemptReport(.failed, reason: .error), stdout: stdout,
                      stderr: stderr + Array("opq-worker: \(message)\n".utf8), message: message)
    }

    /// Stopped at opq's request.
    public static let cancelled = AttemptResult(AttemptReport(.cancelled, reason: .cancelRequested), message: "cancelled")
}

/// An asynchronous Foundation `Operation` that runs one attempt and reports it exactly once.
///
/// Subclasses override ``begin()`` to start the work and call ``finish(_:)`` once when it is done, from
/// any thread; they override ``stopRequested(_:)`` to stop work in progress. The base class keeps the
/// state thread-safe (`isExecuting`/`isFinished` change with `willChangeValue`/`didChangeValue` so that an
/// `OperationQueue` sees them), arms the timeout, and turns `finish` into one ``AttemptEvent/finished(_:)``.
///
/// States: *waiting* (in the queue) → *executing* (``begin()`` called) → *finished*. A stop while waiting
/// reports at once (the queue later starts the operation, which then finishes without running).
// @unchecked Sendable: Foundation's `Operation` is `@unchecked Sendable` and subclasses must restate it. The attempt's
// state (`phase`, `startedAt`, `cause`, `stopDelivered`, `reported`, `timeoutItem`) is guarded by `lock`;
// `timeout` and `sink` are set by the runner before the operation is queued and only read after.
open class AttemptOperation: Operation, @unchecked Sendable {
    private enum Phase { case waiting, executing, finished }

    /// The attempt this operation runs.
    public let key: AttemptKey
    /// Seconds the attempt may execute before ``stop(_:)`` with `.timeout`; nil = no limit. Set before it starts.
    public var timeout: Double?
    /// Where started/progress/finished events go; set by the runner before the operation is enqueued.
    var sink: AttemptEventSink?

    private let lock = NSLock()
    private var phase = Phase.waiting
    private var startedAt: Date?
    private var cause: StopCause?
    private var stopDelivered = false
    private var reported = false
    private var timeoutItem: Deadlines.Entry?

    /// Creates an operation for attempt `key`.
    public init(key: AttemptKey, timeout: Double? = nil) {
        self.key = key
        self.timeout = timeout
        super.init()
    }

    override open var isAsynchronous: Bool { true }
    override open var isExecuting: Bool { lock.withLock { phase == .executing } }
    override open var isFinished: Bool { lock.withLock { phase == .finished } }

    /// Why the attempt was asked to stop, if it was; the first cause wins.
    public var stopCause: StopCause? { lock.withLock { cause } }

    /// Starts the attempt (called by the queue): reports `started` and calls ``begin()``, or finishes at
    /// once if it was stopped while waiting.
    override public final func start() {
        let now = Date()
        let runs: Bool = lock.withLock {
            guard phase == .waiting, !reported, cause == nil, !super.isCancelled else { return false }
            startedAt = now
            return true
        }
        guard runs else {
            _ = stop(.cancel, onlyIfWaiting: true)  // cancelled through Operation API before start: report it
            move(to: .finished)
            return
        }
        move(to: .executing)
        sink?(.started(key, at: now))
        if let timeout, timeout > 0 {
            let item = Deadlines.shared.schedule(after: timeout) { [weak self] in _ = self?.stop(.timeout) }
            lock.withLock { timeoutItem = item }
        }
        begin()
    }

    /// Starts the work; must lead to exactly one ``finish(_:)``. Runs on a queue thread; may block (a
    /// handler) or return at once (a command). The default finishes `succeeded`.
    open func begin() { finish(AttemptResult(.succeeded)) }

    /// Called once, from the stopping thread, when the attempt is stopped while executing (`isCancelled`
    /// is already true). The default does nothing: cooperative work checks `isCancelled`.
    open func stopRequested(_ cause: StopCause) {}

    /// True once the attempt's end is decided (its `finished` event is being or has been delivered).
    var hasReported: Bool { lock.withLock { reported } }

    /// Cancels the attempt (Foundation's API): same as `stop(.cancel)`.
    override open func cancel() { stop(.cancel) }

    /// Asks the attempt to stop for `cause`. Waiting: it is reported at once (never started). Executing:
    /// ``stopRequested(_:)`` runs and the work reports when it is gone. Finished: nothing happens.
    public func stop(_ cause: StopCause) { _ = stop(cause, onlyIfWaiting: false) }

    /// Stops the attempt only if it has not started; returns whether it did.
    func stop(_ newCause: StopCause, onlyIfWaiting: Bool) -> Bool {
        enum Action { case none, reportNow, interrupt }
        let (action, effective): (Action, StopCause) = lock.withLock {
            if reported || phase == .finished || (onlyIfWaiting && startedAt != nil) { return (.none, newCause) }
            if cause == nil { cause = newCause }
            if startedAt == nil {
                reported = true
                return (.reportNow, cause!)
            }
            if stopDelivered { return (.none, cause!) }
            stopDelivered = true
            return (.interrupt, cause!)
        }
        switch action {
        case .none: return false
        case .reportNow:
            super.cancel()
            deliver(AttemptResult.cancelled, cause: effective, startedAt: nil)
        case .interrupt:
            super.cancel()
            stopRequested(effective)
        }
        return true
    }

    /// Ends the attempt with `result` (any thread; only the first call counts). A `cancelled` result of an
    /// attempt stopped for its timeout is reported `failed`, reason `timeout`.
    public func finish(_ result: AttemptResult) {
        let claimed: (StopCause?, Date?)? = lock.withLock {
            guard !reported else { return nil }
            reported = true
            if let item = timeoutItem { Deadlines.shared.cancel(item) }
            timeoutItem = nil
            return (cause, startedAt)
        }
        guard let (cause, startedAt) = claimed else { return }
        deliver(result, cause: cause, startedAt: startedAt)
        move(to: .finished)
    }

    /// Reports handler progress, unless the attempt already reported its end.
    public func emitProgress(fraction: Double, message: String?) {
        guard !lock.withLock({ reported }) else { return }
        sink?(.progress(key, fraction: min(max(fraction, 0), 1), message: message))
    }

    private func deliver(_ result: AttemptResult, cause: StopCause?, startedAt: Date?) {
        var result = result
        var handedBack = false
        if result.report.status == .cancelled {
            switch cause {
            case .timeout?:
                result.report = AttemptReport(.failed, reason: .timeout, exitCode: result.report.exitCode, signal: result.report.signal)
                result.message = timeout.map { "timed out after \($0) s" } ?? "timed out"
            case .handBack?:
                handedBack = true
                result.message = "handed back: the worker is shutting down"
            case .cancel?, nil:
                break
            }
        }
        sink?(.finished(Completion(
            key: key, report: result.report, startedAt: startedAt, endedAt: Date(),
            stdout: result.stdout, stderr: result.stderr, result: result.result, message: result.message,
            handedBack: handedBack)))
    }

    /// Changes phase with KVO notifications for `isExecuting`/`isFinished`.
    private func move(to next: Phase) {
        let previous = lock.withLock { phase }
        guard previous != next, previous != .finished else { return }
        let executingChanges = previous == .executing || next == .executing
        if executingChanges { willChangeValue(forKey: "isExecuting") }
        if next == .finished { willChangeValue(forKey: "isFinished") }
        lock.withLock { phase = next }
        if executingChanges { didChangeValue(forKey: "isExecuting") }
        if next == .finished { didChangeValue(forKey: "isFinished") }
    }
}
