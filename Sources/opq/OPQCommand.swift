import ArgumentParser
import Foundation
import OPQJobFile
import OPQVersion

/// `opq`: run and manage Operation/OperationQueue work across processes and machines.
@main
struct OPQCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opq",
        abstract: "Run job files of dependent operations on opq workers, locally or on a running cluster.",
        discussion: """
            A job file (YAML or JSON, see docs/job-files.md) lists operations — commands, shell lines, handlers — with dependencies, priorities and queues, like Foundation's OperationQueue.

            Examples:
              opq run examples/media-pipeline.yaml     # private local cluster
              opq run jobs.yaml --workers 4 --slots 2
              opq submit jobs.yaml                     # to a running coordinator
              opq submit jobs.yaml --json | jq .job
              opq add --after op-17 --requires success -- ./publish.sh
              ls *.wav | opq map --local 4 -- flac --silent {}
              opq watch job-3                          # live progress bar
              opq wait job-3 && echo all succeeded
              opq status job-3 --json
              opq cancel --job job-3
              opq retry job-3                          # its failed and cancelled operations again
              opq list --state ready; opq show op-17; opq logs op-17
              opq suspend --queue encode; opq resume --queue encode
              opq queue set encode --max-concurrent 2
              opq priority op-17 veryHigh; opq workers --json
              OPQ_COORDINATOR=tcp://127.0.0.1:7131 opq status
              opq keys generate --role client --out ~/.config/opq/keys
              opq --coordinator tcp://head:7131 --server-key coordinator.public --curve-key client.secret status

            Exit status:
              0  every operation succeeded (or the command did what it was asked)
              1  some operation failed or was cancelled
              2  usage error or job-file error (nothing was submitted)
              3  cannot reach the coordinator, or it cannot accept changes now (its state disk is full); retry later
              130  interrupted (Ctrl-C); opq run cancels the job first
            """,
        version: OPQVersion.line,
        subcommands: [RunCommand.self, SubmitCommand.self, AddCommand.self, MapCommand.self, WatchCommand.self, WaitCommand.self, StatusCommand.self, ListCommand.self, ShowCommand.self,
                      LogsCommand.self, CancelCommand.self, RetryCommand.self, SuspendCommand.self, ResumeCommand.self, QueueCommand.self,
                      PriorityCommand.self, WorkersCommand.self,
                      PruneCommand.self, KeysCommand.self]
    )

    /// `opq --coordinator E status` → `opq status --coordinator E`: the global option may come before the
    /// subcommand (ArgumentParser reads options only after the subcommand that declares them).
    static func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
        var arguments = arguments
        var hoisted: [String] = []
        while let first = arguments.first {
            if Self.globalOptionNames.contains(first), arguments.count >= 2 {
                hoisted += arguments.prefix(2)
                arguments.removeFirst(2)
            } else if Self.globalOptionNames.contains(where: { first.hasPrefix($0 + "=") }) {
                hoisted.append(arguments.removeFirst())
            } else {
                break
            }
        }
        guard !hoisted.isEmpty, !arguments.isEmpty else { return hoisted + arguments }
        // `queue set` is two words: the options belong after both.
        let depth = arguments.count >= 2 && arguments[0] == "queue" && arguments[1] == "set" ? 2 : 1
        return arguments.prefix(depth) + hoisted + arguments.dropFirst(depth)
    }

    /// The options of ``GlobalOptions``, which may come before the subcommand.
    static let globalOptionNames = ["--coordinator", "--server-key", "--curve-key"]

    /// The first word when it is neither an option nor a subcommand (`opq stauts`), for a "did you mean".
    static func unknownSubcommand(_ arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-"), first != "help" else { return nil }
        return commandNames.contains(first) ? nil : first
    }

    /// The subcommands' names, in `--help` order.
    static var commandNames: [String] {
        var names: [String] = []
        for command in configuration.subcommands {
            let configuration = command.configuration
            if let name = configuration.commandName { names.append(name) }
        }
        return names
    }

    /// Runs the command line, mapping argument errors to exit status 2 (not ArgumentParser's 64).
    static func main() {
        let arguments = hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst()))
        // Alone, `--version` needs none of ArgumentParser's parsing (≈ 40M instructions at start, issue 19).
        if arguments == ["--version"] {
            print(OPQVersion.line)
            exitAtOnce(0)
        }
        // Before the check below: it reads every subcommand's configuration (issue 19: start time).
        if arguments.first == "status", let command = StatusCommand.parsedByHand(Array(arguments.dropFirst())) {
            do throws(ExitStatus) {
                try command.run()
                exitAtOnce(0)
            } catch {
                exitAtOnce(error.rawValue)
            }
        }
        if let unknown = unknownSubcommand(arguments) {
            let names = commandNames + ["help"]
            printError("opq: '\(unknown)' is not an opq command" + Suggestion.hint(for: unknown, among: names)
                       + "; the commands are: " + names.joined(separator: ", "))
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        if let command = parsedAlone(arguments) { runExiting(command) }
        runExiting(nil, arguments)
    }

    /// Ends a short command (`opq status`, `opq --version`) with `status` once its output is flushed, without running the
    /// exit handlers and static destructors of the libraries (libzmq's, ICU's, libstdc++'s): none holds
    /// anything of such a command (issue 19: ≈ 0.08 ms and 11 page faults of `opq status`'s start).
    static func exitAtOnce(_ status: Int32) -> Never {
        fflush(nil)
        _exit(status)
    }

    /// The words that send a command line the whole way (``parseAsRoot(_:)``) even when its subcommand
    /// parses alone: help, and what only the root answers.
    static let wholeWayWords: Set<String> = ["help", "-h", "--help", "--version", "--generate-completion-script", "--experimental-dump-help"]

    /// The name every subcommand's configuration gives as its super-command (``CommandConfiguration/subcommandOfOPQ``).
    static let name = "opq"

    /// A subcommand without subcommands of its own (`opq status`, `opq submit FILE`) parsed alone, nil
    /// when it does not parse so (a mistake, `--help`): then ``parseAsRoot(_:)`` reads the line again and
    /// prints what it always did.
    ///
    /// Parsing the whole tree of commands reflects every subcommand's properties at each start
    /// (issue 19: most of `opq status`'s time); a subcommand alone reflects only its own.
    static func parsedAlone(_ arguments: [String]) -> (any ParsableCommand)? {
        guard let name = arguments.first, !arguments.contains(where: wholeWayWords.contains),
              let type = configuration.subcommands.first(where: { $0.configuration.commandName == name }),
              type.configuration.subcommands.isEmpty
        else { return nil }
        return try? type.parse(Array(arguments.dropFirst())) as any ParsableCommand
    }

    /// Runs `command`, or else parses `arguments` from the root and runs what they name; exits.
    static func runExiting(_ command: (any ParsableCommand)?, _ arguments: [String] = []) -> Never {
        do {
            var command = try command ?? parseAsRoot(arguments)
            try command.run()
            Foundation.exit(0)
        } catch let status as ExitStatus {
            Foundation.exit(status.rawValue)
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(ExitStatus.usage.rawValue)
            }
            exit(withError: error)
        }
    }
}

extension CommandConfiguration {
    /// This configuration naming `opq` as the super-command: when the subcommand is parsed alone
    /// (``OPQCommand/parsedAlone(_:)``) ArgumentParser then skips its check for
    /// `--generate-completion-script` (a command given as part of another takes no such request), which
    /// reflected two more commands on every start: ≈ 40 % of parsing `opq map` (`perf`). The request
    /// itself still works: it is one of ``OPQCommand/wholeWayWords``, parsed from the root.
    var subcommandOfOPQ: CommandConfiguration {
        var configuration = self
        configuration._superCommandName = OPQCommand.name
        return configuration
    }
}
