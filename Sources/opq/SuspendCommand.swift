import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq suspend [--queue Q]`: stop dispatching a queue's operations (isSuspended = true).
struct SuspendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "suspend",
        abstract: "Suspend a queue: nothing more of it starts until `opq resume` (running operations continue).",
        discussion: """
            Like OperationQueue.isSuspended = true. Operations can still be submitted; they wait as ready.

            Examples:
              opq suspend                   # the queue "default"
              opq suspend --queue encode
              opq resume --queue encode
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp("The queue (default: default).", valueName: "queue"))
    var queue = "default"

    func run() throws {
        try QueueSettingsChange.apply(global.endpoint, queue: queue, QueueSettings(isSuspended: true))
        print("queue \(queue): suspended")
    }
}

/// Sending one `SetQueue` (the shared part of suspend, resume and queue set).
enum QueueSettingsChange {
    static func apply(_ endpoint: String, queue: String, _ settings: QueueSettings) throws {
        let connection = try Connection.open(endpoint)
        do {
            try connection.configureQueue(queue, settings)
        } catch {
            throw Connection.status(for: error)
        }
    }
}
