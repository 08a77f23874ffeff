import Foundation
import OPQClient
import OPQCore

/// Follows a watch stream (snapshot, then events) of one job or of everything and shows its progress:
/// on a terminal a single updating line (a bar of done/total, counts by outcome, running, rate, ETA)
/// with failures printed above it; otherwise plain lines, one per start and finish.
final class JobProgress {
    /// What is watched.
    enum Scope: Equatable {
        /// One job; the stream ends when it has finished.
        case job(JobID)
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

    private let connection: CoordinatorClient
    private let scope: Scope
    private var names: [OperationID: String]
    private let interactive: Bool
    private let verbosity: Verbosity
    private let started = ForegroundJob.now()
    /// Finishes already seen in the first snapshot, which the rate does not count.
    private var finishedBefore: Int?
    /// Print a line once the first snapshot is in (`opq watch`).
    var announces = false
    /// Print JSON lines instead of text (`opq watch --json`).
    var emitsJSON = false
    /// Called with every start and finish, before it is shown (`opq map --joblog`, `--halt`, commands' output).
    var onEvent: ((RemoteEvent.StateChange) -> Void)?
    /// Ask the coordinator for the running output of the watched operations, given to ``onOutput`` as it
    /// comes (`opq map --line-buffer`).
    var includesOutput = false
    /// Called with every piece of running output (with ``includesOutput``).
    var onOutput: ((OutputPiece) -> Void)?
    /// Print no more permanent lines (after Ctrl-C, one summary line stands for the cancelled operations).
    var isMuted = false
    /// How long the coordinator may hold events to send them together (``CoordinatorClient/watch(_:includeOutput:eventDelay:)``):
    /// ``batchedEventDelay``, or 0 when something must react to each event at once (`opq map --halt`).
    var eventDelay = JobProgress.batchedEventDelay
    /// Where the watched job's submission left the coordinator's stream (``JobReceipt/streamPosition``),
    /// for the client that submitted it: the first ``follow(signals:deadline:isAlive:)`` starts there,
    /// with no snapshot of operations `names` already lists (for 2,000 operations the snapshot held the
    /// coordinator's loop for 6 ms while the first commands waited). Later follows take a snapshot.
    var startsAt: JobReceipt.StreamPosition?
    private var states: [OperationID: OperationState] = [:]
    private var outcomes: [OperationID: Outcome] = [:]
    private var lineShown = false

    /// How often the updating line is redrawn between events (its clock, rate and ETA move on).
    static let redrawInterval = 0.5

    /// The event delay a watch asks for when nothing acts on each event at once: 25 ms nobody sees (the
    /// first events after a quiet spell still come at once), while a job of short commands costs the
    /// coordinator and this process one message per 25 ms instead of two per command — each message
    /// wakes a thread in both processes beside the commands. `opq map --local 2` over 2,000 `true`s: 1.09×
    /// the rate and 0.94× the CPU of 5 ms (7 interleaved rounds); 50 ms adds 1.01× more.
    static let batchedEventDelay = 0.025

    /// - Parameters:
    ///   - names: operation id → name, for display.
    ///   - interactive: draw one updating line (stdout is a terminal) instead of plain lines.
    init(connection: CoordinatorClient, scope: Scope, names: [OperationID: String] = [:], interactive: Bool,
         verbosity: Verbosity = .everything) {
        self.connection = connection
        self.scope = scope
        self.names = names
        self.interactive = interactive
        self.verbosity = verbosity
    }

    private var job: JobID? { if case .job(let job) = scope { job } else { nil } }

    private func label(_ id: OperationID) -> String {
        let name = names[id] ?? ""
        return name.isEmpty ? "op-\(id.rawValue)" : "\(name) (op-\(id.rawValue))"
    }

    private func elapsed() -> String { String(format: "%6.1fs", ForegroundJob.now() - started) }

    /// Follows the stream until the job finishes, `signals` signals have arrived (see ``SignalTrap``)
    /// or the deadline passed (both: `.interrupted`), or `isAlive` returns false.
    ///
    /// Driven by events: it blocks on the coordinator's stream and on ``WakePipe`` (signals, an exited
    /// local process) together, and wakes up by itself only to redraw the terminal line.
    ///
    /// - Parameter deadline: on the runtime clock (``ForegroundJob/now()``).
    func follow(signals: Int = 1, deadline: Double? = nil, isAlive: @escaping () -> Bool = { true }) throws(ClientError) -> Ending {
        switch scope {
        case .job(let job):
            let position = startsAt
            startsAt = nil  // once: a second follow (after Ctrl-C) must not replay what was shown already
            if try connection.watch(.job(job), includeOutput: includesOutput, eventDelay: eventDelay, after: position) {
                finishedBefore = 0  // the stream starts at the submission: every finish it brings counts for the rate
            }
        case .all: try connection.watch(.all, includeOutput: includesOutput, eventDelay: eventDelay)
        }
        defer { endLine() }
        let interruption = WakePipe.interruption { SignalTrap.count >= signals || !isAlive() }
        while true {
            let now = ForegroundJob.now()
            if SignalTrap.count >= signals || deadline.map({ now > $0 }) == true { return .interrupted }
            if !isAlive() { return .lost }
            let wakeUps = [deadline, lineShown ? now + Self.redrawInterval : nil].compactMap { $0 }
            let until = wakeUps.min().map { ContinuousClock.now + .seconds(max(0, $0 - now)) }
            switch try connection.nextWatchUpdate(until: until, interruption: interruption) {
            case .output(let piece):
                onOutput?(piece)
            case .timedOut:
                if lineShown { draw() }  // the clock, rate and ETA move on between events
            case .interrupted:
                continue
            case .snapshot(let snapshot):
                for info in snapshot.operations {
                    if names[info.id] == nil { names[info.id] = info.name }
                    // What happened before the stream started is told like an event, so no start or
                    // finish goes unreported when the job is faster than the watch.
                    if info.state == .executing, states[info.id] != .executing {
                        apply(RemoteEvent.StateChange(operation: info.id, job: info.job, state: .executing, attempt: info.attempt,
                                                      worker: info.worker))
                    } else if info.state == .finished, states[info.id] != .finished {
                        apply(RemoteEvent.StateChange(operation: info.id, job: info.job, state: .finished, attempt: info.attempt,
                                                      worker: info.worker, outcome: info.outcome, reason: info.reason,
                                                      exitCode: info.exitCode, signal: info.signal))
                    }
                    if let state = info.state { states[info.id] = state }
                    if info.state == .finished { outcomes[info.id] = info.outcome }
                }
                if snapshot.isComplete, finishedBefore == nil {
                    finishedBefore = counts().done
                    if announces && !emitsJSON { announce() }
                }
                if let job, snapshot.finishedJobs.contains(job) { return .finished }
                draw()
            case .events(let events):
                for event in events {
                    switch event {
                    case .stateChanged(let change):
                        if names[change.operation] == nil { try learnNames(job: change.job) }
                        apply(change)
                    case .jobFinished(let finished) where job == finished: return .finished
                    default: break
                    }
                }
                draw()
            }
        }
    }

    /// Jobs whose operation names have been fetched (watching everything, work submitted later).
    private var namedJobs: Set<JobID> = []

    /// Fetches the names of `job`'s operations, once per job: events carry ids, not names.
    private func learnNames(job: JobID) throws(ClientError) {
        guard namedJobs.insert(job).inserted else { return }
        for info in try connection.job(job).operations where names[info.id] == nil { names[info.id] = info.name }
    }

    private func apply(_ change: RemoteEvent.StateChange) {
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
            say("started   \(label(change.operation))" + (change.worker.map { " on \($0)" } ?? ""))
        case .finished:
            let detail = Self.detail(outcome: change.outcome, reason: change.reason, exitCode: change.exitCode, signal: change.signal)
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
    private func emitJSON(_ change: RemoteEvent.StateChange, previous: OperationState?) {
        var object: [String: Any] = [
            "id": change.operation.rawValue, "name": names[change.operation] ?? "", "job": change.job.rawValue,
            "worker": change.worker.map { $0 as Any } ?? NSNull(), "attempt": change.attempt,
        ]
        if change.time > 0 { object["time"] = change.time }
        switch change.state {
        case .executing where previous != .executing:
            object["event"] = "started"
        case .finished:
            object["event"] = "finished"
            object["outcome"] = Self.word(change.outcome)
            object["reason"] = Self.detail(outcome: change.outcome, reason: change.reason, exitCode: nil, signal: nil)
            object["exitCode"] = change.exitCode.map { $0 as Any } ?? NSNull()
            object["signal"] = change.signal.map { $0 as Any } ?? NSNull()
        default:
            return
        }
        print(JSONOutput.string(object))
        fflush(nil)
    }

    /// "succeeded", "failed", "cancelled".
    static func word(_ outcome: Outcome?) -> String {
        switch outcome {
        case .succeeded?: "succeeded"
        case .failed?: "failed"
        case .cancelled?: "cancelled"
        case nil: "finished"
        }
    }

    /// Why an operation ended, in words ("exit status 1", "timeout", "dependency failed").
    static func detail(outcome: Outcome?, reason: FinishReason?, exitCode: Int32?, signal: Int32?) -> String {
        guard outcome != .succeeded else { return reason == .upToDate ? "up to date" : "" }
        switch reason {
        case .exitStatus?: return exitCode.map { "exit status \($0)" } ?? "exit status"
        case .signal?: return signal.map { "killed by signal \($0)" } ?? "killed by a signal"
        case .error?: return "error"
        case .timeout?: return "timeout"
        case .lostWorker?: return "lost its worker"
        case .cancelRequested?: return "cancel requested"
        case .dependencyFailed?: return "a dependency failed"
        default: return ""
        }
    }

    /// "watching job-3: 40 operations, 12 finished" / "watching everything: 7 unfinished operations".
    private func announce() {
        switch scope {
        case .job(let job): say("watching job-\(job.rawValue): \(names.count) operations, \(counts().done) finished")
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
        let seconds = ForegroundJob.now() - started
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
