import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq queue set Q --max-concurrent N`: change a queue's settings.
struct QueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Change a queue's settings.",
        discussion: """
            Examples:
              opq queue set encode --max-concurrent 2
              opq queue set default --max-concurrent -1    # no limit
            """,
        subcommands: [QueueSetCommand.self]
    ).subcommandOfOPQ
}

/// `opq queue set Q --max-concurrent N` (maxConcurrentOperationCount).
struct QueueSetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set a queue's maxConcurrent (creates the queue if it does not exist).",
        discussion: """
            -1 means no limit, 0 means nothing starts, N > 0 at most N of the queue's operations at once (like OperationQueue.maxConcurrentOperationCount).

            Examples:
              opq queue set encode --max-concurrent 2
              opq queue set default --max-concurrent -1
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The queue's name.")
    var queue: String

    @Option(parsing: .unconditional, help: ArgumentHelp("At most this many running at once (-1 = no limit).", valueName: "n"))
    var maxConcurrent: Int32

    func validate() throws {
        guard maxConcurrent >= -1 else { throw ValidationError("--max-concurrent must be -1 (no limit), 0 or more") }
    }

    func run() throws {
        try QueueSettingsChange.apply(global.endpoint, queue: queue, QueueSettings(maxConcurrent: Int(maxConcurrent)))
        print("queue \(queue): maxConcurrent \(maxConcurrent < 0 ? "no limit" : String(maxConcurrent))")
    }
}
