import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQJobFile

/// Watches the operations of an `opq map` job start and finish (fed by ``JobProgress``): writes a
/// joblog line as each finishes and applies `--halt` — `now` cancels the job, `soon` cancels the
/// operations that have not started (one that is dispatched at that very moment may be cancelled too).
final class MapFollower {
    private let connection: CoordinatorClient
    private let job: JobID
    /// The job's operations in submission order.
    private let operations: [OperationID]
    /// Operation id → its item's sequence number (`{#}`) and command line as parallel writes it.
    private let items: [OperationID: (seq: Int, command: String)]
    /// `:` for every command (a private local cluster), else the worker's name.
    private let localHost: Bool
    private var joblog: FileHandle?
    private var halt: HaltTracker?
    private let haltSpelling: String
    /// Operation id → when its current attempt started (Unix seconds) and on which worker.
    private var starts: [OperationID: (time: Double, worker: String)] = [:]
    private var finished: Set<OperationID> = []

    init(connection: CoordinatorClient, receipt: JobReceipt, items: [(seq: Int, command: String)],
         localHost: Bool, joblog: FileHandle?, halt: HaltPolicy?, haltSpelling: String?) {
        self.connection = connection
        job = receipt.job
        operations = receipt.operations
        self.items = Dictionary(uniqueKeysWithValues: zip(receipt.operations, items).map { ($0, $1) })
        self.localHost = localHost
        self.joblog = joblog
        self.halt = halt.map { HaltTracker(policy: $0, total: receipt.operations.count) }
        self.haltSpelling = haltSpelling ?? ""
    }

    /// True when there is anything to do with events (a joblog or a halt policy).
    var isNeeded: Bool { joblog != nil || halt != nil }

    /// One operation event (see ``JobProgress/onEvent``).
    func observe(_ event: RemoteEvent.StateChange) {
        let id = event.operation
        let time = event.time > 0 ? event.time : ForegroundJob.now()
        switch event.state {
        case .dispatched, .executing:
            if event.state == .executing || starts[id] == nil { starts[id] = (time, event.worker ?? "") }
        case .finished:
            guard finished.insert(id).inserted, let item = items[id] else { return }
            var start = starts[id]
            // Finished before the watch saw it start: its duration and the worker that ran it come from the
            // coordinator (a finished event names no worker).
            if start == nil, event.outcome != .cancelled || event.signal != nil || event.exitCode != nil,
               let status = try? connection.operation(id), let duration = status.duration {
                start = (time - duration, event.worker ?? status.finishedBy ?? "")
            }
            guard let start else { return }  // never ran (cancelled first): not in the log, as parallel
            // Killed by the halt: parallel, which would not have started it (soon) or exits without waiting (now), logs no line.
            if halt?.halted != nil && event.outcome == .cancelled { return }
            let signal = event.signal.map(Int.init) ?? 0
            let exitval = event.exitCode.map(Int.init) ?? (event.outcome == .succeeded ? 0 : signal != 0 ? 0 : -1)
            write(Joblog.Entry(seq: item.seq, host: localHost || start.worker.isEmpty ? ":" : start.worker, start: start.time,
                               runtime: max(0, time - start.time), exitval: exitval, signal: signal, command: item.command))
            halted(after: id, event)
        default:
            break
        }
    }

    private func write(_ entry: Joblog.Entry) {
        guard let joblog else { return }
        joblog.write(Data((entry.line + "\n").utf8))
    }

    private func halted(after id: OperationID, _ event: RemoteEvent.StateChange) {
        guard var tracker = halt else { return }
        let when = tracker.record(exitCode: event.exitCode ?? (event.outcome == .succeeded ? 0 : nil), signal: event.signal)
        halt = tracker
        guard let when else { return }
        let item = items[id].map { "item \($0.seq) (\($0.command))" } ?? "op-\(id.rawValue)"
        switch when {
        case .now:
            printError("opq map: --halt \(haltSpelling) after \(item): cancelling job-\(job.rawValue)")
            _ = try? connection.cancel(.job(job), timeout: 5)
        case .soon:
            let waiting = operations.filter { starts[$0] == nil && !finished.contains($0) }
            let running = operations.count - waiting.count - finished.count
            printError("opq map: --halt \(haltSpelling) after \(item): starting no more commands, waiting for \(running) running")
            for operation in waiting { _ = try? connection.cancel(.operation(operation), timeout: 5) }
        }
    }

    /// The status to end with when the job has ended as `status`: with `--halt`, parallel's exit status
    /// (see ``HaltPolicy``) unless interrupted or unreachable; else `status` itself.
    func ending(_ status: ExitStatus) -> Error {
        try? joblog?.close()
        joblog = nil
        guard let halt, status == .success || status == .someFailed else { return status }
        return ExitCode(halt.exitStatus)
    }
}
