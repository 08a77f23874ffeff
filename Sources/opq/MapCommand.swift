import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQJobFile

/// `opq map -- CMD {} ...`: one operation per input item, like xargs and GNU parallel.
struct MapCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "map",
        abstract: "Run a command once per line of standard input (like xargs -n 1 or GNU parallel), on opq workers.",
        discussion: """
            Reads items from standard input (one per line; with -0, separated by NUL bytes; an empty line is an empty item, as in GNU parallel), submits one operation per item as one job, shows progress and waits; exit 0 only if every operation succeeded.

            Output, as GNU parallel: each operation's stdout goes to standard output and its stderr to standard error, complete and byte for byte, printed when it finishes and never mixed with another's; -k prints in input order, --tag puts the item and a tab before each line, --line-buffer passes whole lines on while the commands run. Progress and the summary go to standard error. (With --json the output is not printed: see opq logs.)

            Placeholders (GNU parallel's, expanded exactly as parallel does), for the item photos/2024/a b.tar.gz, the 7th:
              {}    photos/2024/a b.tar.gz      {.}   photos/2024/a b.tar
              {/}   a b.tar.gz                  {//}  photos/2024   (. without a /)
              {/.}  a b.tar                     {#}   7
              {%}   the job slot, 1..N (needs --local N)
              {1} {2} ... {-1}: one argument by position; {1.} {1/} {1//} {1/.} as above
            A command without any placeholder gets {} appended as its last argument.

            Input sources instead of standard input, as in parallel: after the command, `::: a b c` gives arguments, `:::: FILE...` reads one source per file (- = standard input). Several sources make every combination, the first varying slowest, and {1} {2} ... pick each source's value:
              opq map --local 4 -- convert -resize {2} {1} {2}/{1/} ::: *.jpg ::: 50% 25%
            -n N gives each operation N items ({} becomes N arguments).

            Without --shell the command runs directly (argv, no shell): an item with spaces, quotes, $ or * stays exactly one argument and nothing in it is interpreted. With --shell the words are joined into one `sh -c` script; substituted items are single-quoted, so they still are one word and never code.

            Commands run in the current directory (--cwd to change), on a private local cluster (--local N: N commands at a time on this machine) or on the workers of a running coordinator (--coordinator / OPQ_COORDINATOR). Ctrl-C cancels the job.

            Examples:
              ls *.wav | opq map --local 4 -- flac --silent {}
              find . -name '*.jpg' -print0 | opq map -0 --local 2 -- convert {} small/{/.}.png
              cat urls.txt | opq map --queue fetch --priority low -- curl -sSfO {}
              ls logs/*.log | opq map --shell -- 'gzip -c {} > archive/{/}.gz'
              opq map --no-wait --json -- sha256sum {} < files.txt  # to a coordinator

            As GNU parallel: --joblog FILE writes parallel's joblog (one line per finished command, same columns and formats; Send and Receive are 0); --resume skips the items already in it (by Seq, so the input and command must be unchanged) and --resume-failed reruns those that failed, both appending. --halt now,fail=1 cancels the running commands at the first failure; soon,fail=N lets them finish and starts no more; also fail=N%, success=N, done=N. Commands cancelled by a halt get no joblog line, as in parallel:
              opq map --local 8 --joblog run.log -- ./process {} < items
              opq map --local 8 --joblog run.log --resume-failed -- ./process {} < items

            Exit status: 0 every operation succeeded; 1 some failed or were cancelled; 2 usage error (nothing ran); 3 cannot reach the coordinator (or start the local cluster); 130 interrupted. With --halt, parallel's: the failing command's status for fail=1, the number of failures (at most 101) for fail=N, the percentage failed for fail=N%, 0 once success=N is met.
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @OptionGroup(title: "Operation options") var operation: OperationOptions

    @OptionGroup(title: "Output (each operation's stdout to stdout, stderr to stderr, grouped as it finishes)") var output: MapOutputOptions

    @OptionGroup(title: "Joblog, reruns and halting (as GNU parallel)") var reruns: MapRerunOptions

    @Option(help: ArgumentHelp("Run on a private local cluster that runs n commands at a time, instead of a running coordinator.", valueName: "n"))
    var local: Int?

    @Flag(name: [.customShort("0"), .customLong("null")], help: "Items are separated by NUL bytes (find -print0), not newlines.")
    var null = false

    @Flag(help: "Run each command through /bin/sh -c (items are single-quoted).")
    var shell = false

    @Option(name: .customShort("n"), help: ArgumentHelp("Give each operation n input rows ({} becomes n arguments), as parallel -n.", valueName: "n"))
    var maxArgs = 1

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
        if let local, !(1...Limits.maxSlots).contains(local) { throw ValidationError("--local must be from 1 to \(Limits.maxSlots)") }
        if local != nil && noWait { throw ValidationError("--no-wait needs a running coordinator; it cannot be used with --local") }
        if quiet && verbose { throw ValidationError("--quiet and --verbose contradict each other") }
        if noWait && (reruns.joblog != nil || reruns.halt != nil) { throw ValidationError("--joblog and --halt follow the run; they cannot be used with --no-wait") }
        if !(1...Limits.maxListEntries).contains(maxArgs) { throw ValidationError("-n must be from 1 to \(Limits.maxListEntries)") }
        // --local N is the whole cluster: an operation needing more would wait forever (README "Resources").
        if let local, operation.cpus > local {
            throw ValidationError("--cpus \(operation.cpus) is more than the \(local) cpus --local \(local) starts; the operations could never run")
        }
    }

    func run() throws {
        let base = try operation.spec()
        let template: MapTemplate
        let arguments: [[String]]
        do {
            let (words, sources) = try MapInput.split(command.first == "--" ? Array(command.dropFirst()) : command)
            template = try MapTemplate(words, shell: shell)
            if template.usesSlot && local == nil {
                throw MapTemplateError.invalidInput(
                    "{%} (the job slot) is known only on a private cluster: add --local N (slots 1…N); a coordinator's workers number no slots")
            }
            arguments = try MapInput.operations(try readSources(sources), perOperation: maxArgs)
        } catch let error as MapTemplateError {
            throw fail(.usage, "\(error)")
        }
        guard !arguments.isEmpty else {
            printError("opq map: no input items; nothing to run")
            return
        }
        let started = ForegroundJob.now()
        SignalTrap.install()

        // The private cluster starts first and boots while this process makes the operations.
        let cluster = try local.map { local throws(ExitStatus) in try LocalCluster.launch(workers: 1, slots: local) }
        defer { cluster?.stop() }
        var slots: SlotLocks?
        if let cluster, let local, template.usesSlot {
            slots = SlotLocks(directory: cluster.directory + "/slots", count: local)
            try? FileManager.default.createDirectory(atPath: cluster.directory + "/slots", withIntermediateDirectories: true)
        }
        let all = template.operations(for: arguments, base: base, workingDirectory: operation.workingDirectory, slots: slots)
        let connection = try cluster?.connect() ?? Connection.open(global.endpoint)
        let done = try reruns.done()
        let kept = all.indices.filter { !done.contains($0 + 1) }  // by sequence number, {#}
        guard !kept.isEmpty else {
            printError("opq map: every item is in the joblog \(reruns.joblog ?? "") already; nothing to run")
            return
        }
        let submission = Submission(kept.map { all[$0] })
        let joblog = try reruns.openJoblog()
        let receipt: JobReceipt
        do {
            receipt = try connection.submit(submission)
        } catch {
            throw Connection.status(for: error)
        }
        if json {
            print(JSONOutput.receipt(receipt, names: submission.operations.map(\.name)))
        } else if noWait {
            print("job-\(receipt.job.rawValue)")
        }
        if noWait { return }
        var foreground = ForegroundJob(connection: connection, receipt: receipt, specs: submission.operations,
                                       title: "opq map", verbosity: quiet || json ? .nothing : verbose ? .everything : .failures,
                                       onInterrupt: .cancel, cluster: cluster)
        foreground.started = started
        if json { foreground.showsSummary = false } else { foreground.output = output.printer(connection, receipt: receipt, items: kept.map { arguments[$0] }) }
        let follower = MapFollower(connection: connection, receipt: receipt,
                                   items: kept.map { ($0 + 1, template.commandLine(for: arguments[$0], sequence: $0 + 1)) },
                                   localHost: local != nil, joblog: joblog, halt: try? reruns.haltPolicy(), haltSpelling: reruns.halt)
        if follower.isNeeded { foreground.onEvent = follower.observe }
        // --halt acts on each finish: at once, so no more commands start than before it is seen.
        if reruns.halt != nil { foreground.eventDelay = 0 }
        do { try foreground.run() } catch { throw follower.ending(error) }
        throw follower.ending(.success)
    }

    /// The values of each input source: standard input when there is none (see ``MapInput``).
    private func readSources(_ sources: [MapInput.Source]) throws(MapTemplateError) -> [[String]] {
        let separator: UInt8 = null ? 0 : UInt8(ascii: "\n")
        if sources.isEmpty {
            return [try MapInput.items(readStandardInput(), separator: separator)]
        }
        var values: [[String]] = []
        for source in sources {
            switch source {
            case .arguments(let list):
                values.append(list)
            case .file("-"):
                values.append(try MapInput.items(readStandardInput(), separator: separator, source: "standard input"))
            case .file(let path):
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw .invalidInput("cannot read the input file \(path) (after ::::): \(String(cString: strerror(errno)))")
                }
                values.append(try MapInput.items(data, separator: separator, source: path))
            }
        }
        return values
    }

    private func readStandardInput() -> Data {
        if isatty(STDIN_FILENO) == 1 { printError("opq map: reading items from the terminal, one per line (end with Ctrl-D)") }
        return FileHandle.standardInput.readDataToEndOfFile()
    }
}
