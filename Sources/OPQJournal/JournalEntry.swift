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
    /// A dependency added or removed (`on` may be a reservation).
    case dependency(OperationID, on: OperationID, added: Bool)
    /// Reservations handed out: `count` ids from `first` (OPQCore's `Reservations`).
    case reserved(first: OperationID, count: Int)
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
    /// The job was pruned after its records were journaled (a tombstone): replay forgets it again, and
    /// the next compaction replaces its records by a ``pruned(_:)`` entry (see ``Journal/forget(_:)``).
    case forgotten(JobID)
    /// Operation `by` of a pruned job took `reservation` up: compaction writes it after the job's
    /// ``pruned(_:)`` entry in place of the take-up its submission carried, so the operations that
    /// waited on the reservation are not left waiting for it again after a restart
    /// (`Scheduler.restorePrunedTakeUp`).
    case prunedTakeUp(reservation: OperationID, by: OperationID)

    /// The entry for one of the core's effects, or nil when the effect changes nothing durable. Only the
    /// core's own records are journaled (``Effect/journal(_:)``, and ``Effect/jobFinished(_:)``, stamped
    /// with `time`, seconds since 1970): nothing is inferred from the events watchers see. `key`, when
    /// not empty, replaces a submission's own idempotency key.
    public init?(_ effect: Effect, key: String = "", time: Double) {
        switch effect {
        case .journal(let record):
            self.init(record, key: key)
        case .jobFinished(let job):
            self = .jobFinished(job, time: time)
        case .dispatch, .kill, .notify:
            return nil
        }
    }

    /// The core's journal record as an entry (`key`, when not empty, replaces a submission's own key).
    public init(_ record: JournalRecord, key: String = "") {
        switch record {
        case let .submitted(receipt, submission):
            var submission = submission
            if !key.isEmpty { submission.idempotencyKey = key }
            self = .submitted(receipt, submission, key: submission.idempotencyKey)
        case let .cancelled(ids): self = .cancelled(ids)
        case let .queueSettings(queue, max, suspended): self = .queueSettings(queue: queue, maxConcurrent: max, isSuspended: suspended)
        case let .priority(id, priority): self = .priority(id, priority)
        case let .dependency(id, on, added): self = .dependency(id, on: on, added: added)
        case let .reserved(first, count): self = .reserved(first: first, count: count)
        case let .adopted(id, attempt, worker), let .attempt(id, attempt, worker): self = .attempt(id, attempt: attempt, worker: worker)
        case let .retry(id, reason): self = .retry(id, reason: reason)
        case .requeue(let id): self = .requeue(id)
        case let .finished(id, outcome, reason, _): self = .finished(id, outcome, reason)
        }
    }

    /// The core record this entry replays as (``Scheduler/replay(_:at:)``), or nil for the entries the
    /// journal handles itself (job ends, prunes).
    var record: JournalRecord? {
        switch self {
        case let .submitted(receipt, submission, _): .submitted(receipt, submission)
        case let .cancelled(ids): .cancelled(ids)
        case let .queueSettings(queue, max, suspended): .queueSettings(queue: queue, maxConcurrent: max, isSuspended: suspended)
        case let .priority(id, priority): .priority(id, priority)
        case let .dependency(id, on, added): .dependency(id, on: on, added: added)
        case let .reserved(first, count): .reserved(first: first, count: count)
        case let .attempt(id, attempt, worker): .attempt(id, attempt: attempt, worker: worker)
        case let .retry(id, reason): .retry(id, reason: reason)
        case .requeue(let id): .requeue(id)
        case let .finished(id, outcome, reason): .finished(id, outcome, reason, report: nil)
        case .jobFinished, .pruned, .forgotten, .prunedTakeUp: nil
        }
    }
}

/// The kind byte that starts an encoded entry.
enum EntryKind: UInt8 {
    case submitted = 1, cancelled, queueSettings, priority, dependency, attempt, retry, requeue, finished, jobFinished, pruned, forgotten
    /// A submission stored as the coordinator received it: the bytes are its whole `ClientRequest`.
    case submittedRequest
    /// Reservations handed out.
    case reserved
    /// A take-up by an operation of a pruned job.
    case prunedTakeUp
}

extension JournalEntry {
    /// Appends the entry's binary form to `out`: a kind byte, then its fields (unsigned LEB128 varints,
    /// zig-zag for signed values, length-prefixed bytes and text, 8-byte doubles).
    func encode(into out: inout EntryWriter) throws {
        switch self {
        case let .submitted(receipt, submission, key):
            // As received when the coordinator got it as bytes; built in process (tests, tools), encoded here.
            out.kind(submission.received.isEmpty ? .submitted : .submittedRequest)
            out.varint(receipt.job.rawValue)
            out.varint(receipt.operations.first?.rawValue ?? 0)
            out.varint(UInt64(receipt.operations.count))
            out.text(key)
            if submission.received.isEmpty {
                out.bytes(try Opq_V1_Submit(submission, idempotencyKey: key).serializedBytes())
            } else {
                out.bytes(submission.received)
            }
        case .cancelled(let ids):
            out.kind(.cancelled)
            out.varint(UInt64(ids.count))
            for id in ids { out.varint(id.rawValue) }
        case let .queueSettings(queue, max, suspended):
            out.kind(.queueSettings)
            out.text(queue)
            out.signed(Int64(max))
            out.flag(suspended)
        case let .priority(id, priority):
            out.kind(.priority)
            out.varint(id.rawValue)
            out.signed(Int64(priority.rawValue))
        case let .dependency(id, on, added):
            out.kind(.dependency)
            out.varint(id.rawValue)
            out.varint(on.rawValue)
            out.flag(added)
        case let .reserved(first, count):
            out.kind(.reserved)
            out.varint(first.rawValue)
            out.varint(UInt64(max(0, count)))
        case let .attempt(id, attempt, worker):
            out.kind(.attempt)
            out.varint(id.rawValue)
            out.varint(UInt64(max(0, attempt)))
            out.text(worker.name)
        case let .retry(id, reason):
            out.kind(.retry)
            out.varint(id.rawValue)
            out.byte(reason.rawValue)
        case .requeue(let id):
            out.kind(.requeue)
            out.varint(id.rawValue)
        case let .finished(id, outcome, reason):
            out.kind(.finished)
            out.varint(id.rawValue)
            out.byte(outcome.rawValue)
            out.byte(reason.rawValue)
        case let .jobFinished(job, time):
            out.kind(.jobFinished)
            out.varint(job.rawValue)
            out.double(time)
        case .pruned(let pruned):
            out.kind(.pruned)
            out.varint(pruned.job.rawValue)
            out.varint(pruned.first.rawValue)
            out.bytes(pruned.outcomes.map(\.rawValue))
        case .forgotten(let job):
            out.kind(.forgotten)
            out.varint(job.rawValue)
        case let .prunedTakeUp(reservation, by):
            out.kind(.prunedTakeUp)
            out.varint(reservation.rawValue)
            out.varint(by.rawValue)
        }
    }

    /// Reads the next entry from `input`.
    static func decode(from input: inout EntryReader) throws(DecodeProblem) -> JournalEntry {
        let kindByte = try input.byte()
        guard let kind = EntryKind(rawValue: kindByte) else { throw DecodeProblem("unknown record kind \(kindByte)") }
        func op() throws(DecodeProblem) -> OperationID { OperationID(try input.varint()) }
        switch kind {
        case .submitted, .submittedRequest:
            let job = JobID(try input.varint())
            let first = try input.varint()
            let count = try input.varint()
            let key = try input.text()
            let bytes = try input.bytes()
            let submit: Opq_V1_Submit?
            if kind == .submitted {
                submit = try? Opq_V1_Submit(serializedBytes: bytes)
            } else if let request = try? Opq_V1_ClientRequest(serializedBytes: bytes), case .submit(let body) = request.body {
                submit = body
            } else {
                submit = nil
            }
            guard count < 1 << 40, let submit else { throw DecodeProblem("a submission that does not decode") }
            let receipt = SubmissionReceipt(job: job, operations: (0..<count).map { OperationID(first + $0) })
            var submission = Submission(submit)
            submission.idempotencyKey = key
            if kind == .submittedRequest { submission.received = bytes }
            return .submitted(receipt, submission, key: key)
        case .cancelled:
            let count = try input.varint()
            guard count <= UInt64(input.remaining) else { throw DecodeProblem("a cancel with a malformed id list") }
            var ids: [OperationID] = []
            ids.reserveCapacity(Int(count))
            for _ in 0..<count { ids.append(try op()) }
            return .cancelled(ids)
        case .queueSettings:
            let queue = try input.text()
            let max = try input.signed()
            return .queueSettings(queue: queue, maxConcurrent: Int(truncatingIfNeeded: max), isSuspended: try input.flag())
        case .priority:
            let id = try op()
            let raw = try input.signed()
            guard let priority = QueuePriority(rawValue: Int8(truncatingIfNeeded: raw)) else { throw DecodeProblem("unknown priority \(raw)") }
            return .priority(id, priority)
        case .dependency:
            let id = try op()
            let on = try op()
            return .dependency(id, on: on, added: try input.flag())
        case .reserved:
            let first = try op()
            let count = try input.varint()
            guard first.isReservation, count >= 1, count <= UInt64(Limits.maxReservations) else { throw DecodeProblem("a malformed reservation") }
            return .reserved(first: first, count: Int(count))
        case .attempt:
            let id = try op()
            let attempt = try input.varint()
            return .attempt(id, attempt: Int(truncatingIfNeeded: attempt), worker: WorkerID(try input.text()))
        case .retry:
            let id = try op()
            let raw = try input.byte()
            guard let reason = FinishReason(rawValue: raw) else { throw DecodeProblem("unknown reason \(raw)") }
            return .retry(id, reason: reason)
        case .requeue:
            return .requeue(try op())
        case .finished:
            let id = try op()
            let outcomeByte = try input.byte()
            let reasonByte = try input.byte()
            guard let outcome = Outcome(rawValue: outcomeByte), let reason = FinishReason(rawValue: reasonByte) else {
                throw DecodeProblem("unknown outcome \(outcomeByte) or reason \(reasonByte)")
            }
            return .finished(id, outcome, reason)
        case .jobFinished:
            let job = JobID(try input.varint())
            return .jobFinished(job, time: try input.double())
        case .pruned:
            let job = JobID(try input.varint())
            let first = try op()
            let raw = try input.bytes()
            let outcomes = raw.compactMap(Outcome.init(rawValue:))
            guard outcomes.count == raw.count else { throw DecodeProblem("a pruned job with malformed outcomes") }
            return .pruned(Scheduler.PrunedJob(job: job, first: first, outcomes: outcomes))
        case .forgotten:
            return .forgotten(JobID(try input.varint()))
        case .prunedTakeUp:
            let reservation = try op()
            let by = try op()
            guard reservation.isReservation, !by.isReservation else { throw DecodeProblem("a malformed take-up of a pruned job") }
            return .prunedTakeUp(reservation: reservation, by: by)
        }
    }

    /// The operation a per-operation entry is about (what pruning drops with its job), else nil.
    var operation: OperationID? {
        switch self {
        case .priority(let id, _), .dependency(let id, _, _), .attempt(let id, _, _), .retry(let id, _), .requeue(let id),
             .finished(let id, _, _):
            id
        case .submitted, .cancelled, .queueSettings, .reserved, .jobFinished, .pruned, .forgotten, .prunedTakeUp:
            nil
        }
    }
}
