/// Why something happened: the incoming message or timer a transition followed from (STYLE.md "Causal
/// ids", dask's `stimulus_id`). Every message the coordinator handles and every turn's timers get the
/// next id; the events they cause carry it into the event log (and so into an operation's story), and
/// the log lines written meanwhile carry it as `cause` metadata.
struct Cause: Sendable, Equatable, CustomStringConvertible {
    /// What kind of stimulus it was.
    enum Kind: UInt8, Sendable {
        case submit, cancel, clientRequest
        case workerRegister, workerReport, workerHeartbeat, workerGoodbye
        /// A worker could not take a message (it is declared lost).
        case sendFailed
        /// A worker's key was revoked.
        case keyRevoked
        /// Time passed: the core's deadlines, heartbeats, wait timeouts.
        case timer
        /// Before anything was handled (a replay from the journal).
        case start
    }

    /// Increasing over the coordinator's life (0 = before the first message).
    let id: UInt64
    let kind: Kind

    static let start = Cause(id: 0, kind: .start)

    var description: String {
        let what = switch kind {
        case .submit: "submit"
        case .cancel: "cancel"
        case .clientRequest: "client request"
        case .workerRegister: "worker registration"
        case .workerReport: "worker report"
        case .workerHeartbeat: "worker heartbeat"
        case .workerGoodbye: "worker goodbye"
        case .sendFailed: "worker unreachable"
        case .keyRevoked: "key revoked"
        case .timer: "timer"
        case .start: "journal replay"
        }
        return "#\(id) \(what)"
    }
}

extension CoordinatorState {
    /// Starts handling a new stimulus: what the previous one caused is absorbed under its own id first.
    mutating func begin(_ kind: Cause.Kind) {
        absorbEffects()
        lastCause += 1
        cause = Cause(id: lastCause, kind: kind)
        causeLabel.id = lastCause
    }
}

/// The `cause` metadata of the state's log lines: the id of the stimulus being handled, read when a line
/// is written. Set once in the logger; ``CoordinatorState/begin(_:)`` only stores the new id (setting the
/// logger's metadata for every message cost the coordinator ≈ 3,600 instructions a message, callgrind).
// @unchecked Sendable: written and read only on the coordinator's loop thread (log handlers format a line inside the logging call); a copied state shares it, so a copy's lines show the latest id of either.
final class CauseLabel: CustomStringConvertible, @unchecked Sendable {
    var id: UInt64 = 0
    var description: String { "\(id)" }
}
