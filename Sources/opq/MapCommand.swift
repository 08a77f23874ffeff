import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQJobFile
import OPQWire

/// `opq map -- CMD {} ...`: one operation per input item, like xargs and GNU parallel.
struct MapCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "map",
        abstract: "Run a command once per line of standard input (like xargs -n 1 or GNU parallel), on opq workers.",
        discussion: """
            Reads items from standard input (one per line; with -0, separated by NUL bytes; empty items are skipped), submits one operation per item as one job, shows progress and waits; exit 0 only if every operation succeeded.

            Placeholders (GNU parallel's), for the item photos/2024/a b.tar.gz, the 7th:
              {}    photos/2024/a b.tar.gz      {.}   photos/2024/a b.tar
              {/}   a b.tar.gz                  {//}  photos/2024   (. without a /)
              {/.}  a b.tar                     {#}   7
            A command without any placeholder gets {} appended as its last argument.

            Without --shell the command runs directly (argv, no shell): an item with spaces, quotes, $ or * stays exactly one argument and nothing in it is interpreted. With --shell the words are joined into one `sh -c` script; substituted items are single-quoted, so they still are one word and never code.

            Commands run in the current directory (--cwd to change), on a private local cluster (--local N: N commands at a time on this machine) or on the workers of a running coordinator (--coordinator / OPQ_COORDINATOR). Ctrl-C cancels the job.

            Examples:
              ls *.wav | opq map --local 4 -- flac --silent {}
              find . -name '*.jpg' -print0 | opq map -0 --local 2 -- convert {} small/{/.}.png
              cat urls.txt | opq map --queue fetch --priority low -- curl -sSfO {}
              ls logs/*.log | opq map --shell -- 'gzip -c {} > archive/{/}.gz'
              opq map --no-wait --json -- sha256sum {} < files.txt  # to a coordinator

            Exit status: 0 every operation succeeded; 1 some failed or were cancelled; 2 usage error (nothing ran); 3 cannot reach the coordinator (or start the local cluster); 130 interrupted.
            """
    )

    @OptionGroup var global: GlobalOptions

    @OptionGroup(title: "Operation options") var operation: OperationOptions

    @Option(help: ArgumentHelp("Run on a private local cluster that runs n commands at a time, instead of a running coordinator.", valueName: "n"))
    var local: Int?

    @Flag(name: [.customShort("0"), .customLong("null")], help: "Items are separated by NUL bytes (find -print0), not newlines.")
    var null = false

    @Flag(help: "Run each command through /bin/sh -c (items are single-quoted).")
    var shell = false







    @Flag(help: "Print the job id (or, with --json, the operations) and return instead of waiting.")
    var noWait = false

    @Flag(help: "Print {\"job\": ID, \"operations\": [{\"id\": ID, \"name\": ITEM}, ...]} first; then wait quietly.")
    var json = false

    @Flag(help: "Show no progress lines; print only the summary.")
    var quiet = false

    @Flag(help: "Print a line for every start and finish, not only for failures.")
    var verbose = false

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        if let local, local < 1 { throw ValidationError("--local must be at least 1") }
        if local != nil && noWait { throw ValidationError("--no-wait needs a running coordinator; it cannot be used with --local") }
        if quiet && verbose { throw ValidationError("--quiet and --verbose contradict each other") }
    }

    func run() throws {
        let base = try operation.spec()
        let template: MapTemplate
        do {
            template = try MapTemplate(command.first == "--" ? Array(command.dropFirst()) : command, shell: shell)
        } catch {
            throw fail(.usage, "\(error)")
        }
        let items = try readItems()
        guard !items.isEmpty else {
            printError("opq map: no input items; nothing to run")
            return
        }
        let submission = Submission(template.operations(for: items, base: base, workingDirectory: operation.workingDirectory))
        let started = Date()
        SignalTrap.install()

        var cluster: LocalCluster?
        let connection: CoordinatorConnection
        if let local {
            let started = try LocalCluster.startConnected(workers: 1, slots: local)
            (cluster, connection) = (started.0, started.1)
        } else {
            connection = try Connection.open(global.endpoint)
        }
        defer { cluster?.stop() }
        let receipt: Opq_V1_SubmitAccepted
        do {
            receipt = try connection.submit(submission)
        } catch {
            throw Connection.status(for: error)
        }
        if json {
            print(JSONOutput.receipt(receipt, names: submission.operations.map(\.name)))
        } else if noWait {
            print("job-\(receipt.job)")
        }
        if noWait { return }
        var foreground = ForegroundJob(connection: connection, receipt: receipt, specs: submission.operations,
                                       title: "opq map", verbosity: quiet || json ? .nothing : verbose ? .everything : .failures,
                                       onInterrupt: .cancel, cluster: cluster)
        foreground.started = started
        if json { foreground.showsSummary = false }
        try foreground.run()
    }

    /// Standard input split into items; an item that is not UTF-8 is a usage error (names travel as text).
    private func readItems() throws(ExitStatus) -> [String] {
        if isatty(STDIN_FILENO) == 1 { printError("opq map: reading items from the terminal, one per line (end with Ctrl-D)") }
        let data = FileHandle.standardInput.readDataToEndOfFile()
        let separator: UInt8 = null ? 0 : UInt8(ascii: "\n")
        var items: [String] = []
        for (index, bytes) in data.split(separator: separator, omittingEmptySubsequences: false).enumerated() where !bytes.isEmpty {
            guard let item = String(validating: bytes, as: UTF8.self) else {
                throw fail(.usage, "input item \(index + 1) is not valid UTF-8; opq passes arguments as UTF-8 text (rename the file)")
            }
            items.append(item)
        }
        return items
    }
}
