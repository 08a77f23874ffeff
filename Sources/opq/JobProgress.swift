import Foundation
import OPQClient
import OPQCore
import OPQWire

/// Follows a watch stream (snapshot, then events) of one job or of everything and shows its progress:
/// on a terminal a single updating line (a bar of done/total, counts by outcome, running, rate, ETA)
/// with failures printed above it; otherwise plain lines, one per start and finish.
final class JobProgress {
    /// What is watched.
    enum Scope: Equatable {
        /// One job; the stream ends when it has finished.
        case job(UInt64)
        /// Every operation; the stream goes on until interrupted.
        case all
    }

    /// Which plain lines to print.
    enum Verbosity {
        /// One line per start and per finish (always the failures, on a terminal).
        case everything
        /// Only operations that did not succeed.
        case failures
        /// Nothing but the updating line on a terminal.
        case nothing
    }

    enum Ending {
        /// The job finished.
        case finished
        /// A signal arrived (see ``SignalTrap``).
        case interrupted
        /// `isAlive` said the cluster is gone.
        case lost
    }

    private let connection: CoordinatorConnection
    private let scope: Scope
    private var names: [UInt64: String]
    private let interactive: Bool
    private let verbosity: Verbosity
    private let started = Date()
    /// Finishes already seen in the first snapshot, which the rate does not count.
    private var finishedBefore: Int?
    /// Print a line once the first snapshot is in (`opq watch`).
    var announces = false
    /// Print JSON lines instead of text (`opq watch --json`).
    var emitsJSON = false
    /// Called on every turn of ``follow(signals:deadline:isAlive:)``, at least every 0.2 s.
    var onTurn: (() -> Void)?
    /// Called with every start and finish, before it is shown (`opq map --joblog`, `--halt`, commands' output).
    var onEvent: ((Opq_V1_OperationEvent) -> Void)?
    /// Print no more permanent lines (after Ctrl-C, one summary line stands for the cancelled operations).
    var isMuted = false
    private var states: [UInt64: Opq_V1_OperationState] = [:]
    private var outcomes: [UInt64: Opq_V1_Outcome] = [:]
    private var lastSequence: UInt64?
    private var watchID: UInt64?
    private var lineShown = false

    /// - Parameters:
    ///   - names: operation id → name, for display.
    ///   - interactive: draw one updating line (stdout is a terminal) instead of plain lines.
    init(connection: CoordinatorConnection, scope: Scope, names: [UInt64: String] = [:], interactive: Bool,
         verbosity: Verbosity = .everything) {
        self.connection = connection
        self.scope = scope
        self.names = names
        self.interactive = interactive
        self.verbosity = verbosity
    }

    private var job: UInt64? { if case .job(let job) = scope { job } else { nil } }

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
            onTurn?()
            guard let message = try connection.nextStreamMessage(timeout: 0.2) else {
                if !isAlive() { return .lost }
                if lineShown { draw() }  // the clock, rate and ETA move on between events
                continue
            }
            switch message.body {
            case .snapshot(let snapshot) where snapshot.watch == watchID:
                lastSequence = snapshot.sequence
                for info in snapshot.operations {
                    if names[info.id] == nil { names[info.id] = info.name }
                    // What happened before the stream started is told like an event, so no start or
                    // finish goes unreported when the job is faster than the watch.
                    var change = Opq_V1_OperationEvent()
                    change.operation = info.id
                    change.job = info.job
                    change.attempt = info.attempt
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
                if !snapshot.more, finishedBefore == nil {
                    finishedBefore = counts().done
                    if announces && !emitsJSON { announce() }
                }
                if let job, snapshot.jobs.contains(where: { $0.id == job && $0.finished }) { return .finished }
                draw()
            case .events(let events) where events.watch == watchID:
                if let last = lastSequence, events.previous != last {
                    try subscribe()  // a gap: start again from a fresh snapshot
                    continue
                }
                lastSequence = events.items.last?.sequence ?? lastSequence
                for item in events.items {
                    switch item.kind {
                    case .operation(let change):
                        if names[change.operation] == nil { try learnNames(job: change.job) }
                        apply(change)
                    case .jobFinished(let finished) where job == finished: return .finished
                    default: break
                    }
                }
                draw()
            default:
                break
            }
        }
    }

    /// Jobs whose operation names have been fetched (watching everything, work submitted later).
    private var namedJobs: Set<UInt64> = []

    /// Fetches the names of `job`'s operations, once per job: events carry ids, not names.
    private func learnNames(job: UInt64) throws(ClientError) {
        guard namedJobs.insert(job).inserted else { return }
        let details = try connection.request {
            $0.getJob.job = job
            $0.getJob.includeOperations = true
        }.reply.job.details
        for info in details where names[info.id] == nil { names[info.id] = info.name }
    }

    private func subscribe() throws(ClientError) {
        if let old = watchID { try connection.request { $0.unwatch.watch = old } }
        lastSequence = nil
        watchID = try connection.request {
            switch scope {
            case .job(let job): $0.watch.job = job
            case .all: $0.watch.all = Opq_V1_All()
            }
        }.reply.requestID
    }

    private func apply(_ change: Opq_V1_OperationEvent) {
        onEvent?(change)
        let previous = states[change.operation]
        states[change.operation] = change.state
        if change.state == .finished { outcomes[change.operation] = change.outcome }
        if emitsJSON {
            emitJSON(change, previous: previous)
            return
        }
        switch change.state {
        case .executing where previous != .executing && !interactive && verbosity == .everything:
            say("started   \(label(change.operation))" + (change.worker.isEmpty ? "" : " on \(change.worker)"))
        case .finished:
            let detail = Self.detail(outcome: change.outcome, reason: change.reason,
                                     exitCode: change.hasExitCode ? change.exitCode : nil, signal: change.hasSignal ? change.signal : nil)
            let wanted = switch verbosity {
            case .everything: change.outcome != .succeeded || !interactive
            case .failures: change.outcome != .succeeded
            case .nothing: false
            }
            if wanted {
                say(Self.word(change.outcome).padding(toLength: 9, withPad: " ", startingAt: 0) + " \(label(change.operation))"
                    + (detail.isEmpty ? "" : ": \(detail)"))
            }
        default:
            break
        }
    }

    /// One JSON object per line for every start and finish (`opq watch --json`): `event` ("started" or
    /// "finished"), `id`, `name`, `job`, `worker`, `attempt`, `time`; for a finish also `outcome`, `reason`,
    /// `exitCode`, `signal`.
    private func emitJSON(_ change: Opq_V1_OperationEvent, previous: Opq_V1_OperationState?) {
        var object: [String: Any] = [
            "id": change.operation, "name": names[change.operation] ?? "", "job": change.job,
            "worker": change.worker.isEmpty ? NSNull() : change.worker as Any, "attempt": change.attempt,
        ]
        if change.time > 0 { object["time"] = change.time }
        switch change.state {
        case .executing where previous != .executing:
            object["event"] = "started"
        case .finished:
            object["event"] = "finished"
            object["outcome"] = Self.word(change.outcome)
            object["reason"] = Self.detail(outcome: change.outcome, reason: change.reason, exitCode: nil, signal: nil)
            object["exitCode"] = change.hasExitCode ? change.exitCode as Any : NSNull()
            object["signal"] = change.hasSignal ? change.signal as Any : NSNull()
        default:
            return
        }
        print(JSONOutput.string(object))
        fflush(nil)
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
        guard outcome != .succeeded else { return reason == .upToDate ? "up to date" : "" }
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

    /// "watching job-3: 40 operations, 12 finished" / "watching everything: 7 unfinished operations".
    private func announce() {
        switch scope {
        case .job(let job): say("watching job-\(job): \(names.count) operations, \(counts().done) finished")
        case .all: say("watching everything: \(states.count) unfinished operations")
        }
    }

    /// Prints a permanent line (above the updating line on a terminal).
    private func say(_ text: String) {
        guard !isMuted else { return }
        if interactive && lineShown { print("\r\u{1B}[2K", terminator: "") }
        lineShown = false
        print("\(elapsed()) \(text)")
        fflush(nil)
    }

    private struct Counts {
        var succeeded = 0, failed = 0, cancelled = 0, running = 0
        var done: Int { succeeded + failed + cancelled }
    }

    private func counts() -> Counts {
        var counts = Counts()
        for (id, state) in states {
            if state == .finished {
                switch outcomes[id] {
                case .succeeded?: counts.succeeded += 1
                case .failed?: counts.failed += 1
                default: counts.cancelled += 1
                }
            } else if state == .executing || state == .dispatched {
                counts.running += 1
            }
        }
        return counts
    }

    /// Redraws the updating line (terminal only): bar, done/total, outcomes, running, rate, ETA.
    private func draw() {
        guard interactive, !emitsJSON else { return }
        let counts = counts()
        let total = max(job == nil ? states.count : names.count, states.count)
        let width = 24
        let filled = total > 0 ? width * counts.done / total : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        var text = "\(elapsed()) [\(bar)] \(counts.done)/\(total)  \(counts.succeeded) ok"
        if counts.failed > 0 { text += ", \(counts.failed) failed" }
        if counts.cancelled > 0 { text += ", \(counts.cancelled) cancelled" }
        text += ", \(counts.running) running"
        let seconds = Date().timeIntervalSince(started)
        let recent = counts.done - (finishedBefore ?? counts.done)
        if recent > 0, seconds > 0.5 {
            let rate = Double(recent) / seconds
            text += String(format: rate >= 10 ? ", %.0f/s" : ", %.2f/s", rate)
            let remaining = total - counts.done
            if remaining > 0 { text += ", ETA " + Self.duration(Double(remaining) / rate) }
        }
        print("\r\u{1B}[2K\(text)", terminator: "")
        fflush(nil)
        lineShown = true
    }

    /// "42s", "3m07s", "2h05m".
    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return String(format: "%dm%02ds", whole / 60, whole % 60) }
        return String(format: "%dh%02dm", whole / 3600, whole / 60 % 60)
    }

    private func endLine() {
        if interactive && lineShown { print("") }
        lineShown = false
    }
}
