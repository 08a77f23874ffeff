import Foundation
import OPQCore
import OPQWire

/// One journaled change. The client requests are the core's ``JournalRecord``s; the rest is what the
/// workers caused, as the core's events showed it (an attempt given, a retry, a requeue, a finish).
public enum JournalEntry: Sendable {
    /// An accepted submission with the ids it was given, and its idempotency key (empty = none).
    case submitted(SubmissionReceipt, Submission, key: String)
    /// A cancel of one operation, or the snapshot of a cancel-all.
    case cancelled([OperationID])
    /// A queue's settings after a change.
    case queueSettings(queue: String, maxConcurrent: Int, isSuspended: Bool)
    /// A priority change.
    case priority(OperationID, QueuePriority)
    /// A dependency added or removed.
    case dependency(OperationID, on: OperationID, added: Bool)
    /// An attempt went to a worker (dispatched, or adopted back after a reconnect).
    case attempt(OperationID, attempt: Int, worker: WorkerID)
    /// An attempt failed and the operation waits for a retry.
    case retry(OperationID, reason: FinishReason)
    /// An attempt went back to `ready`: its worker left or was lost.
    case requeue(OperationID)
    /// The operation finished.
    case finished(OperationID, Outcome, FinishReason)
    /// Every operation of the job has finished, at `time` (seconds since 1970).
    case jobFinished(JobID, time: Double)
    /// The job was pruned: only its id range and outcomes are kept, so ids are never reused.
    case pruned(Scheduler.PrunedJob)

    /// The entry for one of the core's effects, or nil when the effect changes nothing durable: the
    /// core's journal records, and the events that show what workers caused (an attempt dispatched, a
    /// failed attempt waiting for its retry, an attempt requeued, a finish). `key` is the idempotency key
    /// of a submission; `time` (seconds since 1970) stamps a finished job.
    public init?(_ effect: Effect, key: String = "", time: Double) {
        switch effect {
        case .journal(let record):
            self.init(record, key: key)
        case .notify(let event):
            switch event.state {
            case .dispatched:
                guard let worker = event.worker else { return nil }
                self = .attempt(event.operation, attempt: event.attempt, worker: worker)
            case .finished:
                self = .finished(event.operation, event.outcome ?? .succeeded, event.reason ?? .completed)
            case .pending where event.retryAt != nil:
                self = .retry(event.operation, reason: event.reason ?? .exitStatus)
            case .ready where event.reason == .lostWorker:
                self = .requeue(event.operation)
            case .pending, .ready, .executing:
                return nil
            }
        case .jobFinished(let job):
            self = .jobFinished(job, time: time)
        case .dispatch, .kill:
            return nil
        }
    }

    /// The core's journal record as an entry (`key` for a submission).
    public init(_ record: JournalRecord, key: String = "") {
        switch record {
        case let .submitted(receipt, submission): self = .submitted(receipt, submission, key: key)
        case let .cancelled(ids): self = .cancelled(ids)
        case let .queueSettings(queue, max, suspended): self = .queueSettings(queue: queue, maxConcurrent: max, isSuspended: suspended)
        case let .priority(id, priority): self = .priority(id, priority)
        case let .dependency(id, on, added): self = .dependency(id, on: on, added: added)
        case let .adopted(id, attempt, worker): self = .attempt(id, attempt: attempt, worker: worker)
        }
    }
}

/// What the last report of an operation said beyond its outcome: exit status, duration and the captured
/// output tails. Journaled with the finish (or failed attempt) that carried it.
public struct OperationOutput: Sendable, Equatable {
    public var exitCode: Int32?
    public var signal: Int32?
    public var duration: Double
    public var stdout: [UInt8]
    public var stdoutTotal: UInt64
    public var stderr: [UInt8]
    public var stderrTotal: UInt64
    public var errorMessage: String

    public init(exitCode: Int32?, signal: Int32?, duration: Double, stdout: [UInt8], stdoutTotal: UInt64,
                stderr: [UInt8], stderrTotal: UInt64, errorMessage: String) {
        self.exitCode = exitCode
        self.signal = signal
        self.duration = duration
        self.stdout = stdout
        self.stdoutTotal = stdoutTotal
        self.stderr = stderr
        self.stderrTotal = stderrTotal
        self.errorMessage = errorMessage
    }

    /// Nothing worth keeping: no exit status, no output, no message (a handler's plain success).
    public var isBare: Bool {
        exitCode == nil && signal == nil && stdout.isEmpty && stderr.isEmpty && errorMessage.isEmpty
    }
}

/// How entries are stored: one row of `journal(seq, kind, a, b, c, t, d)`; the meaning of the columns
/// depends on `kind` (see ``JournalEntry``).
enum EntryKind: Int64 {
    case submitted = 1, cancelled, queueSettings, priority, dependency, attempt, retry, requeue, finished, jobFinished, pruned
}

/// A row's columns.
struct EntryRow {
    var kind: EntryKind
    var a: Int64 = 0
    var b: Int64 = 0
    var c: Int64 = 0
    var t: String?
    var d: [UInt8]?
    var time: Double?
}

extension JournalEntry {
    /// The row that stores this entry.
    func row() throws -> EntryRow {
        switch self {
        case let .submitted(receipt, submission, key):
            let bytes: [UInt8] = try Opq_V1_Submit(submission, idempotencyKey: key).serializedBytes()
            return EntryRow(kind: .submitted, a: Int64(receipt.job.rawValue), b: Int64(receipt.operations.first?.rawValue ?? 0),
                            c: Int64(receipt.operations.count), t: key.isEmpty ? nil : key, d: bytes)
        case .cancelled(let ids):
            var bytes = [UInt8]()
            bytes.reserveCapacity(ids.count * 8)
            for id in ids { withUnsafeBytes(of: id.rawValue.littleEndian) { bytes.append(contentsOf: $0) } }
            return EntryRow(kind: .cancelled, a: Int64(ids.count), d: bytes)
        case let .queueSettings(queue, max, suspended):
            return EntryRow(kind: .queueSettings, a: Int64(max), b: suspended ? 1 : 0, t: queue)
        case let .priority(id, priority):
            return EntryRow(kind: .priority, a: Int64(id.rawValue), b: Int64(priority.rawValue))
        case let .dependency(id, on, added):
            return EntryRow(kind: .dependency, a: Int64(id.rawValue), b: Int64(on.rawValue), c: added ? 1 : 0)
        case let .attempt(id, attempt, worker):
            return EntryRow(kind: .attempt, a: Int64(id.rawValue), b: Int64(attempt), t: worker.name)
        case let .retry(id, reason):
            return EntryRow(kind: .retry, a: Int64(id.rawValue), c: Int64(reason.rawValue))
        case .requeue(let id):
            return EntryRow(kind: .requeue, a: Int64(id.rawValue))
        case let .finished(id, outcome, reason):
            return EntryRow(kind: .finished, a: Int64(id.rawValue), b: Int64(outcome.rawValue), c: Int64(reason.rawValue))
        case let .jobFinished(job, time):
            return EntryRow(kind: .jobFinished, a: Int64(job.rawValue), time: time)
        case .pruned(let pruned):
            return EntryRow(kind: .pruned, a: Int64(pruned.job.rawValue), b: Int64(pruned.first.rawValue),
                            c: Int64(pruned.outcomes.count), d: pruned.outcomes.map(\.rawValue))
        }
    }

    /// The entry a row stores, or nil (with the reason) when the row makes no sense.
    static func decode(_ row: EntryRow) -> Result<JournalEntry, DecodeProblem> {
        func op(_ value: Int64) -> OperationID { OperationID(UInt64(bitPattern: value)) }
        switch row.kind {
        case .submitted:
            guard let bytes = row.d, let submit = try? Opq_V1_Submit(serializedBytes: bytes) else {
                return .failure(DecodeProblem("a submission that does not decode"))
            }
            let first = UInt64(bitPattern: row.b)
            let receipt = SubmissionReceipt(job: JobID(UInt64(bitPattern: row.a)),
                                            operations: (0..<UInt64(max(0, row.c))).map { OperationID(first + $0) })
            return .success(.submitted(receipt, Submission(submit), key: submit.idempotencyKey))
        case .cancelled:
            guard let bytes = row.d, bytes.count % 8 == 0 else { return .failure(DecodeProblem("a cancel with a malformed id list")) }
            let ids = stride(from: 0, to: bytes.count, by: 8).map { start in
                OperationID(bytes[start..<start + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            }
            return .success(.cancelled(ids))
        case .queueSettings:
            guard let queue = row.t else { return .failure(DecodeProblem("queue settings without a queue")) }
            return .success(.queueSettings(queue: queue, maxConcurrent: Int(row.a), isSuspended: row.b != 0))
        case .priority:
            guard let priority = QueuePriority(rawValue: Int8(truncatingIfNeeded: row.b)) else {
                return .failure(DecodeProblem("unknown priority \(row.b)"))
            }
            return .success(.priority(op(row.a), priority))
        case .dependency:
            return .success(.dependency(op(row.a), on: op(row.b), added: row.c != 0))
        case .attempt:
            return .success(.attempt(op(row.a), attempt: Int(row.b), worker: WorkerID(row.t ?? "")))
        case .retry:
            guard let reason = FinishReason(rawValue: UInt8(truncatingIfNeeded: row.c)) else { return .failure(DecodeProblem("unknown reason \(row.c)")) }
            return .success(.retry(op(row.a), reason: reason))
        case .requeue:
            return .success(.requeue(op(row.a)))
        case .finished:
            guard let outcome = Outcome(rawValue: UInt8(truncatingIfNeeded: row.b)),
                  let reason = FinishReason(rawValue: UInt8(truncatingIfNeeded: row.c)) else {
                return .failure(DecodeProblem("unknown outcome \(row.b) or reason \(row.c)"))
            }
            return .success(.finished(op(row.a), outcome, reason))
        case .jobFinished:
            return .success(.jobFinished(JobID(UInt64(bitPattern: row.a)), time: row.time ?? 0))
        case .pruned:
            let outcomes = (row.d ?? []).compactMap(Outcome.init(rawValue:))
            guard outcomes.count == row.c else { return .failure(DecodeProblem("a pruned job with malformed outcomes")) }
            return .success(.pruned(Scheduler.PrunedJob(job: JobID(UInt64(bitPattern: row.a)), first: op(row.b), outcomes: outcomes)))
        }
    }
}

/// Why a row could not be decoded.
struct DecodeProblem: Error {
    let text: String
    init(_ text: String) { self.text = text }
}
