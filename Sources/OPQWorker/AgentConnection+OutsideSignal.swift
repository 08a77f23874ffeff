import Logging
import OPQCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A batch system stopping a worker signals its commands too: `scancel JOB` and `systemctl stop` send
/// SIGTERM to every process of the job or unit at the same moment, the worker and its commands alike. A
/// command killed that way did not fail: its worker is being taken away, so the attempt is handed back
/// (the coordinator runs it again elsewhere) like any attempt a stopping worker gives up.
///
/// The two signals race: the command's death may reach this loop a moment before the worker's own
/// SIGTERM does. So an attempt whose command died of a SIGTERM opq did not send is held for
/// ``outsideSignalGrace`` seconds: if the worker starts stopping meanwhile (or already is), it is handed
/// back; otherwise it is reported as it ended (`failed`, signal 15) — a kill by hand of one command.
extension AgentConnection {
    /// How long an attempt killed by an outside SIGTERM waits for this worker's own stop.
    static let outsideSignalGrace = 1.0

    /// Holds `completion` (or files it as handed back) when its command died of a SIGTERM from outside
    /// opq; returns false for any other completion, which the caller files as usual.
    func holdIfSignalledFromOutside(_ completion: Completion, now: Double) -> Bool {
        let report = completion.report
        guard !completion.handedBack, report.status == .failed, report.reason == .signal, report.signal == SIGTERM else {
            return false
        }
        if stopLevel > .running {
            handBackSignalledFromOutside(completion)
        } else {
            signalledFromOutside.append((completion, now + Self.outsideSignalGrace))
        }
        return true
    }

    /// Hands back every held attempt once this worker is stopping; reports those whose grace is over.
    func releaseSignalledFromOutside(now: Double) {
        guard !signalledFromOutside.isEmpty else { return }
        if stopLevel > .running {
            for held in signalledFromOutside { handBackSignalledFromOutside(held.completion) }
            signalledFromOutside.removeAll()
            return
        }
        while let held = signalledFromOutside.first, held.until <= now {
            signalledFromOutside.removeFirst()
            outbox.add(.finished(held.completion))
        }
    }

    private func handBackSignalledFromOutside(_ completion: Completion) {
        var handedBack = completion
        handedBack.handedBack = true
        logger.notice("a command was stopped by the SIGTERM that stops this worker: handing its attempt back",
                      metadata: attemptMetadata(completion.key))
        outbox.add(.finished(handedBack))
    }
}
