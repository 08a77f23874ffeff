import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq resume [--queue Q]`: dispatch a suspended queue's operations again (isSuspended = false).
struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume a suspended queue: its ready operations start again.",
        discussion: """
            Examples:
              opq resume                    # the queue "default"
              opq resume --queue encode
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp("The queue (default: default).", valueName: "queue"))
    var queue = "default"

    func run() throws {
        try QueueSettingsChange.apply(global.endpoint, queue: queue, QueueSettings(isSuspended: false))
        print("queue \(queue): resumed")
    }
}
