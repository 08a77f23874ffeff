import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq priority OP P`: change an operation's queue priority.
struct PriorityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "priority",
        abstract: "Change an operation's queue priority (it moves to the back of its new level).",
        discussion: """
            P is a level name (veryLow, low, normal, high, veryHigh) or an integer, snapped toward normal
            like Foundation's Operation.QueuePriority (e.g. 6 → high).

            Examples:
              opq priority op-17 veryHigh
              opq priority 17 -4
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Argument(help: "op-N or N.")
    var operation: String

    @Argument(help: "veryLow, low, normal, high, veryHigh, or an integer.")
    var priority: String

    func validate() throws {
        guard QueuePriority(parsing: priority) != nil else {
            throw ValidationError("'\(priority)' is not a priority (veryLow, low, normal, high, veryHigh, or an integer)")
        }
    }

    func run() throws {
        let id = try ShowCommand.operationID(operation)
        guard let level = QueuePriority(parsing: priority) else { throw fail(.usage, "'\(priority)' is not a priority") }
        let connection = try Connection.open(global.endpoint)
        do {
            try connection.setPriority(of: OperationID(id), to: level)
        } catch {
            throw Connection.status(for: error)
        }
        print("op-\(id): priority \(level)")
    }
}
