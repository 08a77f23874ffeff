import Foundation
import OPQCore
import OPQWire

/// The reports a worker owes its coordinator, in the order they happened, until they are sent.
///
/// Reports wait here while the coordinator is away, so a `Finished` is never lost to a reconnect; the
/// attempts whose `Finished` is still here count as held when the worker re-registers (the coordinator
/// must not requeue them as lost before it hears how they ended). Progress is coalesced: only the latest
/// unsent progress of an attempt is kept. Handed-back attempts are not reports: they wait for `Goodbye`.
///
/// A sent `Finished` is kept until the coordinator says it journaled it (`reports_durable` ≥ the
/// message's sequence): if the coordinator crashes first, the worker sends it again after it
/// re-registers, and counts the attempt as held meanwhile, so a finished operation is never run again.
/// Output chunks are kept the same way until acknowledged (and sent again after a re-registration; the
/// coordinator writes each at its offset, so a repeat changes nothing); ``acknowledge(upTo:)`` returns
/// their bytes, which the caller gives back to the ``OutputWindow``.
struct ReportOutbox {
    /// One unsent report.
    enum Item {
        case started(AttemptKey)
        case progress(AttemptKey, fraction: Double, message: String?)
        case finished(Completion)
        case output(AttemptKey, OutputChunk)

        /// Kept after sending until acknowledged (finishes and output chunks).
        var needsAcknowledgement: Bool {
            switch self {
            case .finished, .output: true
            case .started, .progress: false
            }
        }

        /// Bytes of output it carries.
        var outputBytes: Int { if case .output(_, let chunk) = self { chunk.bytes.count } else { 0 } }
    }

    /// Unsent reports, oldest first.
    private(set) var items: [Item] = []
    /// Attempts handed back (stopped for a shutdown, or refused while stopping), for `Goodbye`.
    private(set) var handedBack: [AttemptKey] = []
    /// Sequence of the last `Reports` sent since the last registration.
    private(set) var sequence: UInt64 = 0
    /// Finished reports and output chunks sent but not yet acknowledged by the coordinator, by the
    /// sequence that carried them.
    private(set) var unconfirmed: [(sequence: UInt64, items: [Item])] = []

    /// Whether there is a report to send.
    var isEmpty: Bool { items.isEmpty }

    /// Files one runner event: a report, or (for a handed-back completion) an entry for `Goodbye`.
    mutating func add(_ event: AttemptEvent) {
        switch event {
        case .started(let key, _):
            items.append(.started(key))
        case let .progress(key, fraction, message):
            items.removeAll { if case .progress(key, _, _) = $0 { true } else { false } }
            items.append(.progress(key, fraction: fraction, message: message))
        case .finished(let completion) where completion.handedBack:
            items.removeAll { if case .progress(completion.key, _, _) = $0 { true } else { false } }
            handBack(completion.key)
        case .finished(let completion):
            items.append(.finished(completion))
        case let .output(key, chunk):
            items.append(.output(key, chunk))
        }
    }

    /// Records an attempt given back without running it (a dispatch refused while stopping).
    mutating func handBack(_ key: AttemptKey) {
        if !handedBack.contains(key) { handedBack.append(key) }
    }

    /// The attempts whose `Finished` has not been sent.
    var unsentFinished: [AttemptKey] {
        items.compactMap { if case .finished(let completion) = $0 { completion.key } else { nil } }
    }

    /// The oldest reports as one `Reports` message, with the raw frames it references and how many items it
    /// holds: as many as the protocol's limits allow in one message (normally all of them). Nil when nothing
    /// is pending. Remove the items with ``removeFirst(_:)`` once the message is sent.
    func nextReports() -> (message: Opq_V1_WorkerMessage, raw: [[UInt8]], count: Int)? {
        guard !items.isEmpty else { return nil }
        var reports: [Opq_V1_Report] = []
        var raw: [[UInt8]] = []
        let rawLimit = WireLimits.maxFrames - 2  // signature + message
        for item in items {
            if reports.count == WireLimits.maxBatchItems || raw.count + 2 > rawLimit { break }
            reports.append(Self.report(item, raw: &raw))
        }
        var message = Opq_V1_WorkerMessage.reports(reports)
        message.reports.sequence = sequence + 1
        return (message, raw, reports.count)
    }

    /// Drops the `count` oldest reports (they were sent as the next sequence); their `Finished` reports
    /// wait in ``unconfirmed`` until acknowledged.
    mutating func removeFirst(_ count: Int) {
        sequence += 1
        let kept = items.prefix(count).filter(\.needsAcknowledgement)
        if !kept.isEmpty { unconfirmed.append((sequence, Array(kept))) }
        items.removeFirst(count)
    }

    /// The coordinator journaled every report up to `sequence`: forget their `Finished` reports and
    /// output chunks. Returns the bytes of output acknowledged.
    @discardableResult
    mutating func acknowledge(upTo sequence: UInt64) -> Int {
        guard let first = unconfirmed.first, first.sequence <= sequence else { return 0 }
        let acknowledged = unconfirmed.prefix { $0.sequence <= sequence }
        unconfirmed.removeFirst(acknowledged.count)
        return acknowledged.reduce(0) { $0 + $1.items.reduce(0) { $0 + $1.outputBytes } }
    }

    /// A new registration: `Finished` reports never acknowledged go out again, first, and numbering
    /// starts over.
    mutating func resendUnconfirmed() {
        sequence = 0
        guard !unconfirmed.isEmpty else { return }
        items.insert(contentsOf: unconfirmed.flatMap(\.items), at: 0)
        unconfirmed.removeAll()
    }

    /// The wire report of `item`; a finish report's output tails are appended to `raw`.
    static func report(_ item: Item, raw: inout [[UInt8]]) -> Opq_V1_Report {
        switch item {
        case .started(let key):
            return .started(key.operation, attempt: key.attempt)
        case let .progress(key, fraction, message):
            return .progress(.with {
                $0.operation = key.operation.rawValue
                $0.attempt = UInt32(clamping: key.attempt)
                $0.fraction = fraction
                $0.message = Opq_V1_Progress.clampedMessage(message ?? "")
            })
        case .finished(let completion):
            return .finished(finished(completion, raw: &raw))
        case let .output(key, chunk):
            raw.append(chunk.bytes)
            return .with {
                $0.output.operation = key.operation.rawValue
                $0.output.attempt = UInt32(clamping: key.attempt)
                $0.output.stream = chunk.stream == .stdout ? .stdout : .stderr
                $0.output.offset = chunk.offset
                $0.output.frame = UInt32(raw.count)
            }
        }
    }

    /// The `Finished` of `completion`; a handler's result bytes travel in a raw frame of their own.
    static func finished(_ completion: Completion, raw: inout [[UInt8]]) -> Opq_V1_Finished {
        let started = completion.startedAt ?? completion.endedAt
        var finished = Opq_V1_Finished(
            completion.key.operation, attempt: completion.key.attempt, report: completion.report,
            duration: max(0, completion.endedAt.timeIntervalSince(started)))
        finished.attachOutput(stdout: completion.stdout, stderr: completion.stderr, to: &raw)
        if !completion.result.isEmpty { finished.result = Opq_V1_OutputTail.attach(completion.result, to: &raw) }
        if completion.report.status != .succeeded, let message = completion.message {
            finished.errorMessage = String(message.prefix(WireLimits.maxNameBytes))
        }
        return finished
    }
}
