import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq cancel OP | --job J | --queue Q | --all`.
struct CancelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel an operation, a job, a queue's operations, or everything unfinished.",
        discussion: """
            Operations that have not started finish cancelled at once; running ones are stopped
            (SIGTERM to the command's process group, SIGKILL after the grace period). Finished
            operations are not touched.

            Examples:
              opq cancel op-17
              opq cancel --job job-3
              opq cancel --queue encode
              opq cancel --all
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Argument(help: "op-N (or N): one operation.")
    var operation: String?

    @Option(help: ArgumentHelp("Every unfinished operation of this job (job-N or N).", valueName: "job"))
    var job: String?

    @Option(help: ArgumentHelp("cancelAllOperations on this queue.", valueName: "queue"))
    var queue: String?

    @Flag(help: "Every unfinished operation of every queue.")
    var all = false

    func validate() throws {
        let given = [operation != nil, job != nil, queue != nil, all].filter { $0 }.count
        guard given == 1 else { throw ValidationError("give exactly one of OP, --job, --queue or --all") }
    }

    func run() throws {
        var target = CancelTarget.all
        if let operation {
            guard case .operation(let id)? = TargetID(operation, bare: { .operation(OperationID($0)) }) else {
                throw fail(.usage, "'\(operation)' is not an operation id (write op-N, or op-rN for a reservation)")
            }
            target = .operation(id)
        } else if let job {
            guard case .job(let id)? = TargetID(job, bare: { .job(JobID($0)) }) else {
                throw fail(.usage, "'\(job)' is not a job id (write job-N)")
            }
            target = .job(id)
        } else if let queue {
            target = .queue(queue)
        }
        let connection = try Connection.open(global.endpoint)
        do {
            let cancelled = try connection.cancel(target)
            print("cancelled \(cancelled.count) operation(s)" + (cancelled.isEmpty ? "" : ": " + cancelled.map { "\($0)" }.joined(separator: " ")))
        } catch {
            throw Connection.status(for: error)
        }
    }
}
