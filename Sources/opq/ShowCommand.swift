import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQWire

/// `opq show OP`: everything known about one operation.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one operation: state, outcome, queue, priority, attempts, worker, exit code.",
        discussion: """
            Examples:
              opq show op-17
              opq show 17 --json    # {"id": 17, "name": …, "job": …, "queue": …, "state": …, "outcome": …, …}

            An operation that has not started says why ("waiting:"): the dependencies it waits for, a
            suspended queue, a queue at its maximum, no live worker serving its queue with its labels,
            or that it is in line for a free slot. In --json: "waiting": [{"kind", "text", …}].
              opq logs op-17        # its captured output
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "op-N or N.")
    var operation: String

    @Flag(help: "Print JSON with stable field names (id, name, job, queue, state, outcome, priority, attempts, worker, exitCode, …).")
    var json = false

    func run() throws {
        let id = try ShowCommand.operationID(operation)
        let connection = try Connection.open(global.endpoint)
        let info: Opq_V1_OperationInfo
        do {
            info = try connection.request { $0.getOperation.operation = id }.reply.operation
        } catch {
            throw Connection.status(for: error)
        }
        if json {
            var object = JSONOutput.operation(info)
            object["dependencies"] = info.dependencies
            object["labels"] = info.labels
            object["waiting"] = info.blockers.map(JSONOutput.blocker)
            if info.state == .finished {  // as `opq watch --json`: "" for a plain success, "up to date", "exit status 1", …
                object["reason"] = JobProgress.detail(outcome: info.outcome, reason: info.reason, exitCode: info.hasExitCode ? info.exitCode : nil,
                                                      signal: info.hasSignal ? info.signal : nil)
            }
            print(JSONOutput.string(object))
            return
        }
        let state = info.state == .finished ? JobProgress.word(info.outcome) : (info.coreState?.description ?? "?")
        print("op-\(info.id)\(info.name.isEmpty ? "" : " (\(info.name))")")
        print("  job:        job-\(info.job)")
        print("  queue:      \(info.queue)")
        print("  state:      \(state)\(info.cancelled && info.state != .finished ? " (cancelled)" : "")"
              + (info.state == .finished && info.reason == .upToDate ? " (up to date: outputs newer than inputs, not run)" : ""))
        print("  priority:   \(info.queuePriority)")
        print("  attempts:   \(info.attempt)")
        if !info.worker.isEmpty { print("  worker:     \(info.worker)") }
        if info.hasExitCode { print("  exit code:  \(info.exitCode)") }
        if info.hasSignal { print("  signal:     \(info.signal)") }
        if info.hasDurationSeconds { print(String(format: "  duration:   %.2f s", info.durationSeconds)) }
        if !info.dependencies.isEmpty { print("  after:      " + info.dependencies.map { "op-\($0)" }.joined(separator: " ")) }
        if info.barrier { print("  barrier:    yes") }
        for (k, blocker) in info.blockers.enumerated() { print((k == 0 ? "  waiting:    " : "              ") + blocker.text) }
    }

    /// Parses `op-N` or `N`, or fails with the usage status.
    static func operationID(_ text: String) throws(ExitStatus) -> UInt64 {
        guard case .operation(let id)? = TargetID(text, bare: { .operation(OperationID($0)) }) else {
            throw fail(.usage, "'\(text)' is not an operation id (write op-N)")
        }
        return id.rawValue
    }
}
