import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq retry JOB [--failed] [--cancelled]`: submit a job's failed and cancelled operations again, as
/// a new job, with the dependants that did not succeed because of them.
struct RetryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Run a job's failed or cancelled operations again (with their dependants that did not succeed), as a new job.",
        discussion: """
            Reads the job from the coordinator and submits, as one new job, its operations that finished failed (--failed) or cancelled (--cancelled; both when neither is given), together with every operation depending on them, directly or not, that did not succeed either. The copies keep their names, commands, queues, priorities, labels, timeouts and retries, and their edges among each other; an edge to an operation that succeeded is dropped (it is done), one to another unfinished or failed operation is kept. An unnamed operation that another one depends on is named op-N after its old id. The old job stays as it was.

            Examples:
              opq retry job-3                 # failed and cancelled
              opq retry job-3 --failed --wait
              opq retry 3 --cancelled

            Exit status: 0 submitted (with --wait: every operation succeeded); 1 nothing to retry, or with --wait some operation failed; 2 usage error; 3 cannot reach the coordinator.
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Argument(help: "job-N (or N).")
    var job: String

    @Flag(help: "Retry the operations that failed.")
    var failed = false

    @Flag(help: "Retry the operations that were cancelled.")
    var cancelled = false

    @Flag(help: "Wait until the new job has finished, showing progress.")
    var wait = false

    func run() throws {
        guard case .job(let id)? = TargetID(job, bare: { .job(JobID($0)) }) else {
            throw fail(.usage, "'\(job)' is not a job id (write job-N)")
        }
        let outcomes: Set<Outcome> = failed || cancelled ? Set([failed ? .failed : nil, cancelled ? .cancelled : nil].compactMap { $0 })
            : [.failed, .cancelled]
        let connection = try Connection.open(global.endpoint)
        let receipt: JobReceipt
        let plan: RetryPlan
        do {
            plan = RetryPlan(try connection.job(id).operations, retrying: outcomes)
            guard !plan.specs.isEmpty else {
                printError("opq retry: job-\(id.rawValue) has no \(outcomes.count == 2 ? "failed or cancelled" : failed ? "failed" : "cancelled") operation to retry")
                throw ExitStatus.someFailed
            }
            receipt = try connection.submit(Submission(plan.specs), idempotencyKey: "opq-retry-\(UUID().uuidString)")
        } catch let error as ClientError {
            throw Connection.status(for: error)
        }
        print("job-\(receipt.job.rawValue): retrying \(plan.specs.count) operation(s) of job-\(id.rawValue) as a new job")
        for (old, new) in zip(plan.originals, receipt.operations) {
            let name = old.name.isEmpty ? "" : "\(old.name) "
            print("  \(name)(op-\(old.id.rawValue) \(JobProgress.word(old.outcome)) → op-\(new.rawValue))")
        }
        guard wait else { return }
        SignalTrap.install()
        try ForegroundJob(connection: connection, receipt: receipt, specs: plan.specs,
                          title: "job-\(receipt.job.rawValue)", verbosity: .everything, onInterrupt: .detach).run()
    }
}

/// The operations `opq retry` submits again (see ``RetryCommand``), as specs in the job's order.
struct RetryPlan {
    /// The operations retried, in the job's order.
    let originals: [OperationStatus]
    /// Their specs for the new job.
    let specs: [OperationSpec]

    /// - Complexity: O(operations + edges).
    init(_ operations: [OperationStatus], retrying outcomes: Set<Outcome>) {
        let byID = Dictionary(operations.map { ($0.id, $0) }) { first, _ in first }
        var dependants: [OperationID: [OperationID]] = [:]
        for info in operations {
            for dependency in info.dependencies where byID[dependency] != nil { dependants[dependency, default: []].append(info.id) }
        }
        let finishedWithout = { (info: OperationStatus) in info.state == .finished && info.outcome != .succeeded }
        var selected: Set<OperationID> = []
        var pending = operations.filter { $0.state == .finished && $0.outcome.map(outcomes.contains) == true }.map(\.id)
        while let id = pending.popLast() {
            guard selected.insert(id).inserted else { continue }
            pending += (dependants[id] ?? []).filter { byID[$0].map(finishedWithout) ?? false }
        }
        originals = operations.filter { selected.contains($0.id) }
        let referenced = Set(originals.flatMap(\.dependencies).filter(selected.contains))
        let name = { (info: OperationStatus) in info.name.isEmpty && referenced.contains(info.id) ? "op-\(info.id.rawValue)" : info.name }
        specs = originals.map { info in
            let dependencies = info.dependencies.compactMap { dependency -> DependencyReference? in
                if selected.contains(dependency), let old = byID[dependency] { return .name(name(old)) }
                if byID[dependency]?.outcome == .succeeded { return nil }  // done: nothing to wait for
                return .id(dependency)
            }
            return OperationSpec(
                name: name(info), queue: info.queue, work: info.work, dependencies: dependencies, priority: info.priority,
                qualityOfService: info.qualityOfService, requires: info.requires,
                retries: max(0, info.attempt - 1) + info.retriesLeft,  // the attempts it was given
                timeout: info.timeout, labels: info.labels, isBarrier: info.isBarrier)
        }
    }
}
