import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQWire

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
    )

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
        let outcomes: Set<Opq_V1_Outcome> = failed || cancelled ? Set([failed ? .failed : nil, cancelled ? .cancelled : nil].compactMap { $0 })
            : [.failed, .cancelled]
        let connection = try Connection.open(global.endpoint)
        let receipt: Opq_V1_SubmitAccepted
        let plan: RetryPlan
        do {
            let reply = try connection.request {
                $0.getJob.job = id.rawValue
                $0.getJob.includeOperations = true
            }.reply
            plan = RetryPlan(reply.job.details, retrying: outcomes)
            guard !plan.specs.isEmpty else {
                printError("opq retry: job-\(id.rawValue) has no \(outcomes.count == 2 ? "failed or cancelled" : failed ? "failed" : "cancelled") operation to retry")
                throw ExitStatus.someFailed
            }
            receipt = try connection.submit(Submission(plan.specs.map(OperationSpec.init)),
                                            idempotencyKey: "opq-retry-\(UUID().uuidString)")
        } catch let error as ClientError {
            throw Connection.status(for: error)
        }
        print("job-\(receipt.job): retrying \(plan.specs.count) operation(s) of job-\(id.rawValue) as a new job")
        for (old, new) in zip(plan.originals, receipt.operations) {
            let name = old.name.isEmpty ? "" : "\(old.name) "
            print("  \(name)(op-\(old.id) \(JobProgress.word(old.outcome)) → op-\(new))")
        }
        guard wait else { return }
        SignalTrap.install()
        try ForegroundJob(connection: connection, receipt: receipt, specs: plan.specs.map(OperationSpec.init),
                          title: "job-\(receipt.job)", verbosity: .everything, onInterrupt: .detach).run()
    }
}

/// The operations `opq retry` submits again (see ``RetryCommand``), as wire specs in the job's order.
struct RetryPlan {
    /// The operations retried, in the job's order.
    let originals: [Opq_V1_OperationInfo]
    /// Their specs for the new job.
    let specs: [Opq_V1_OperationSpec]

    /// - Complexity: O(operations + edges).
    init(_ operations: [Opq_V1_OperationInfo], retrying outcomes: Set<Opq_V1_Outcome>) {
        let byID = Dictionary(operations.map { ($0.id, $0) }) { first, _ in first }
        var dependants: [UInt64: [UInt64]] = [:]
        for info in operations {
            for dependency in info.dependencies where byID[dependency] != nil { dependants[dependency, default: []].append(info.id) }
        }
        let finishedWithout = { (info: Opq_V1_OperationInfo) in info.state == .finished && info.outcome != .succeeded }
        var selected: Set<UInt64> = []
        var pending = operations.filter { $0.state == .finished && outcomes.contains($0.outcome) }.map(\.id)
        while let id = pending.popLast() {
            guard selected.insert(id).inserted else { continue }
            pending += (dependants[id] ?? []).filter { byID[$0].map(finishedWithout) ?? false }
        }
        originals = operations.filter { selected.contains($0.id) }
        let referenced = Set(originals.flatMap(\.dependencies).filter(selected.contains))
        let name = { (info: Opq_V1_OperationInfo) in info.name.isEmpty && referenced.contains(info.id) ? "op-\(info.id)" : info.name }
        specs = originals.map { info in
            var spec = Opq_V1_OperationSpec()
            spec.name = name(info)
            spec.queue = info.queue
            if info.hasWork { spec.work = info.work }
            spec.dependencies = info.dependencies.compactMap { dependency in
                var reference = Opq_V1_DependencyRef()
                if selected.contains(dependency), let old = byID[dependency] {
                    reference.name = name(old)
                } else if byID[dependency]?.outcome == .succeeded {
                    return nil  // done: nothing to wait for
                } else {
                    reference.id = dependency
                }
                return reference
            }
            spec.priority = info.priority
            spec.qos = info.qos
            spec.requires = info.requires
            spec.retries = UInt32(max(0, Int(info.attempt) - 1)) + info.retriesLeft  // the attempts it was given
            if info.hasTimeoutSeconds { spec.timeoutSeconds = info.timeoutSeconds }
            spec.labels = info.labels
            spec.barrier = info.barrier
            return spec
        }
    }
}
