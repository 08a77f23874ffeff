import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq prune`: forget finished jobs, in the coordinator and in its journal.
struct PruneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Forget finished jobs: their operations, outcomes and output leave the coordinator and its journal.",
        discussion: """
            Only jobs whose every operation has finished are pruned; their ids are never reused, and a later \
            dependency on one of their operations still counts as finished. `opq status` shows the history that \
            is kept.

            Examples:
              opq prune                      # every finished job
              opq prune --older-than 7d      # jobs finished at least a week ago (s, m, h, d; plain number = seconds)
              opq prune --json               # {"jobs": [3, 4], "operations": 120}
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Option(help: "Only jobs finished at least this long ago: a number of seconds, or 90s, 30m, 12h, 7d.")
    var olderThan: String?

    @Flag(help: "Print {\"jobs\": [ID, ...], \"operations\": N}.")
    var json = false

    func validate() throws {
        if let olderThan, PruneCommand.seconds(olderThan) == nil {
            throw ValidationError("--older-than must be a duration like 3600, 90s, 30m, 12h or 7d, not '\(olderThan)'")
        }
    }

    func run() throws {
        let connection = try Connection.open(global.endpoint)
        let pruned: PruneResult
        do {
            pruned = try connection.prune(olderThan: olderThan.map { PruneCommand.seconds($0)! })
        } catch {
            throw Connection.status(for: error)
        }
        if json {
            print(JSONOutput.string(["jobs": pruned.jobs.map(\.rawValue), "operations": pruned.operations]))
        } else if pruned.jobs.isEmpty {
            print("nothing to prune")
        } else {
            print("pruned \(pruned.jobs.count) job\(pruned.jobs.count == 1 ? "" : "s") (\(pruned.operations) operations): "
                  + pruned.jobs.map { "job-\($0.rawValue)" }.joined(separator: " "))
        }
    }

    /// Seconds in `text`: a non-negative number, optionally followed by s, m, h or d.
    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var number = Substring(text)
        var factor = 1.0
        if let last = text.last, let unit = units[last] {
            number = number.dropLast()
            factor = unit
        }
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        return value * factor
    }
}
