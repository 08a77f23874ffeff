import Foundation
import OPQClient
import OPQCore
import OPQWire

/// Follows one job's watch stream (snapshot, then events) and shows its progress: a single
/// updating line on a terminal, plain lines (one per start and finish) otherwise.
final class JobProgress {
    enum Ending {
        /// The job finished.
        case finished
        /// A signal arrived (see ``SignalTrap``).
        case interrupted
        /// `isAlive` said the cluster is gone.
        case lost
    }

    private let connection: CoordinatorConnection
    private let job: UInt64
    private let names: [UInt64: String]
    private let interactive: Bool
    private let started = Date()
    private var states: [UInt64: Opq_V1_OperationState] = [:]
    private var outcomes: [UInt64: Opq_V1_Outcome] = [:]
    private var lastSequence: UInt64?
    private var watchID: UInt64?
    private var lineShown = false

    /// - Parameters:
    ///   - names: operation id → name, for display.
    ///   - interactive: draw one updating line (stdout is a terminal) instead of plain lines.
    init(connection: CoordinatorConnection, job: UInt64, names: [UInt64: String], interactive: Bool) {
        self.connection = connection
        self.job = job
        self.names = names
        self.interactive = interactive
    }

    private func label(_ id: UInt64) -> String {
        let name = names[id] ?? ""
        return name.isEmpty ? "op-\(id)" : "\(name) (op-\(id))"
    }

    private func elapsed() -> String { String(format: "%6.1fs", Date().timeIntervalSince(started)) }

    /// Follows the stream until the job finishes, `signals` signals have arrived (see ``SignalTrap``)
    /// or the deadline passed (both: `.interrupted`), or `isAlive` returns false.
    func follow(signals: Int = 1, deadline: Date? = nil, isAlive: () -> Bool = { true }) throws(ClientError) -> Ending {
        try subscribe()
        defer { endLine() }
        while true {
            if SignalTrap.count >= signals || deadline.map({ Date() > $0 }) == true { return .interrupted }
            guard let message = try connection.nextStreamMessage(timeout: 0.2) else {
                if !isAlive() { return .lost }
                continue
            }
            switch message.body {
            case .snapshot(let snapshot) where snapshot.watch == watchID:
                lastSequence = snapshot.sequence
                for info in snapshot.operations {
                    // What happened before the stream started is told like an event, so no start or
                    // finish goes unreported when the job is faster than the watch.
                    var change = Opq_V1_OperationEvent()
                    change.operation = info.id
                    change.worker = info.worker
                    if info.state == .executing, states[info.id] != .executing {
                        change.state = .executing
                        apply(change)
                    } else if info.state == .finished, states[info.id] != .finished {
                        change.state = .finished
                        change.outcome = info.outcome
                        change.reason = info.reason
                        if info.hasExitCode { change.exitCode = info.exitCode }
                        if info.hasSignal { change.signal = info.signal }
                        apply(change)
                    }
                    states[info.id] = info.state
                    if info.state == .finished { outcomes[info.id] = info.outcome }
                }
                if snapshot.jobs.contains(where: { $0.id == job && $0.finished }) { return .finished }
                draw()
            case .events(let events) where events.watch == watchID:
                if let last = lastSequence, events.previous != last {
                    try subscribe()  // a gap: start again from a fresh snapshot
                    continue
                }
                lastSequence = events.items.last?.sequence ?? lastSequence
                for item in events.items {
                    switch item.kind {
                    case .operation(let change): apply(change)
                    case .jobFinished(let finished) where finished == job: return .finished
                    default: break
                    }
                }
                draw()
            default:
                break
            }
        }
    }

    private func subscribe() throws(ClientError) {
        if let old = watchID { try connection.request { $0.unwatch.watch = old } }
        lastSequence = nil
        watchID = try connection.request { $0.watch.job = job }.reply.requestID
    }

    private func apply(_ change: Opq_V1_OperationEvent) {
        let previous = states[change.operation]
        states[change.operation] = change.state
        switch change.state {
        case .executing where previous != .executing && !interactive:
            say("started   \(label(change.operation))" + (change.worker.isEmpty ? "" : " on \(change.worker)"))
        case .finished:
            outcomes[change.operation] = change.outcome
            let detail = Self.detail(outcome: change.outcome, reason: change.reason,
                                     exitCode: change.hasExitCode ? change.exitCode : nil, signal: change.hasSignal ? change.signal : nil)
            if change.outcome != .succeeded || !interactive {
                say(Self.word(change.outcome).padding(toLength: 9, withPad: " ", startingAt: 0) + " \(label(change.operation))"
                    + (detail.isEmpty ? "" : ": \(detail)"))
            }
        default:
            break
        }
    }

    /// "succeeded", "failed", "cancelled".
    static func word(_ outcome: Opq_V1_Outcome) -> String {
        switch outcome {
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .cancelled: "cancelled"
        default: "finished"
        }
    }

    /// Why an operation ended, in words ("exit status 1", "timeout", "dependency failed").
    static func detail(outcome: Opq_V1_Outcome, reason: Opq_V1_FinishReason, exitCode: Int32?, signal: Int32?) -> String {
        guard outcome != .succeeded else { return "" }
        switch reason {
        case .exitStatus: return exitCode.map { "exit status \($0)" } ?? "exit status"
        case .signal: return signal.map { "killed by signal \($0)" } ?? "killed by a signal"
        case .error: return "error"
        case .timeout: return "timeout"
        case .lostWorker: return "lost its worker"
        case .cancelRequested: return "cancel requested"
        case .dependencyFailed: return "a dependency failed"
        default: return ""
        }
    }

    /// Prints a permanent line (above the updating line on a terminal).
    private func say(_ text: String) {
        if interactive && lineShown { print("\r\u{1B}[2K", terminator: "") }
        lineShown = false
        print("\(elapsed()) \(text)")
        fflush(nil)
    }

    /// Redraws the updating line (terminal only).
    private func draw() {
        guard interactive else { return }
        var succeeded = 0, failed = 0, cancelled = 0, running = 0
        for (id, state) in states {
            if state == .finished {
                switch outcomes[id] {
                case .succeeded?: succeeded += 1
                case .failed?: failed += 1
                default: cancelled += 1
                }
            } else if state == .executing || state == .dispatched {
                running += 1
            }
        }
        let total = names.count
        let done = succeeded + failed + cancelled
        let width = 24
        let filled = total > 0 ? width * done / total : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        var text = "\(elapsed()) [\(bar)] \(done)/\(total)  \(succeeded) ok"
        if failed > 0 { text += ", \(failed) failed" }
        if cancelled > 0 { text += ", \(cancelled) cancelled" }
        text += ", \(running) running"
        print("\r\u{1B}[2K\(text)", terminator: "")
        fflush(nil)
        lineShown = true
    }

    private func endLine() {
        if interactive && lineShown { print("") }
        lineShown = false
    }
}
