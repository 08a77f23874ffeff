import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq list [--queue Q] [--state S] [--job J]`: operations, in submission order.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List operations, in submission order, optionally filtered by queue, state and job.",
        discussion: """
            Filters combine with AND. States: pending, ready, dispatched, executing, finished.

            Examples:
              opq list                          # every operation
              opq list --queue encode --state ready
              opq list --job job-3 --json       # [{"id": …, "name": …, "state": …, "outcome": …}, …]
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp("Only this queue's operations.", valueName: "queue"))
    var queue: String?

    @Option(help: ArgumentHelp("Only operations in this state (pending, ready, dispatched, executing, finished).", valueName: "state"))
    var state: String?

    @Option(help: ArgumentHelp("Only this job's operations (job-N or N).", valueName: "job"))
    var job: String?

    @Flag(help: "Print a JSON array of operations with stable field names (id, name, job, queue, state, outcome, priority, attempts, worker, exitCode).")
    var json = false

    func validate() throws {
        if let state, OperationState.allCases.first(where: { $0.description == state }) == nil {
            throw ValidationError("unknown state '\(state)' (use pending, ready, dispatched, executing or finished)")
        }
    }

    func run() throws {
        var filter = OperationFilter(queue: queue)
        if let state, let core = OperationState.allCases.first(where: { $0.description == state }) {
            filter.states = [core]
        }
        if let job {
            guard case .job(let id)? = TargetID(job, bare: { .job(JobID($0)) }) else {
                throw fail(.usage, "'\(job)' is not a job id (write job-N)")
            }
            filter.job = id
        }
        let connection = try Connection.open(global.endpoint)
        let operations: [OperationStatus]
        do {
            operations = try connection.operations(filter)  // every page of them
        } catch {
            throw Connection.status(for: error)
        }
        if json {
            print(JSONOutput.string(operations.map(JSONOutput.operation)))
            return
        }
        if operations.isEmpty { print("no operations") }
        for op in operations { print(Self.line(op)) }
    }

    /// One operation as a table line: id, name, job, state (or outcome), queue, priority, extras.
    static func line(_ op: OperationStatus) -> String {
        let state = op.state == .finished ? JobProgress.word(op.outcome) : (op.state?.description ?? "?")
        var line = "op-\(op.id.rawValue)".padding(toLength: 8, withPad: " ", startingAt: 0) + " "
        line += (op.name.isEmpty ? "-" : op.name).padding(toLength: 20, withPad: " ", startingAt: 0) + " "
        line += "job-\(op.job.rawValue)".padding(toLength: 8, withPad: " ", startingAt: 0) + " "
        line += state.padding(toLength: 10, withPad: " ", startingAt: 0) + " queue \(op.queue), \(op.priority)"
        if let exitCode = op.exitCode { line += ", exit \(exitCode)" }
        if let worker = op.worker { line += ", on \(worker)" }
        return line
    }
}
