import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq add -- CMD ARGS...`: one operation, to a running coordinator.
struct AddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add one operation (a command, or an empty join point) to a running coordinator; print its id.",
        discussion: """
            The command runs on a worker as argv, without a shell (--shell runs one `sh -c` script instead), in the current directory unless --cwd says otherwise. With no command the operation is empty: a join point that finishes as soon as its dependencies have.

            --after makes it wait for operations added before (any job, any queue), like Operation.addDependency; like `sbatch --dependency=afterany`, or `afterok` with --requires success.

            Examples:
              fetch=$(opq add --name fetch -- curl -sSfO https://example.com/a.tar)
              opq add --after "$fetch" --requires success -- tar xf a.tar
              opq add --queue encode --priority high --timeout 600 --retries 2 -- ffmpeg -i in.mov out.mp4
              opq add --shell -- 'make -j2 > build.log 2>&1'
              opq add --after op-3 --after op-4 --name both-done     # an empty join point
              opq add --after job-7 -- ./report.sh                    # after every operation of job-7
              opq add --wait -- ./check.sh && echo passed

            Exit status: 0 added (with --wait: it succeeded); 1 with --wait: it failed or was cancelled; 2 usage error or refused (unknown dependency, …), nothing added; 3 cannot reach the coordinator.
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @OptionGroup(title: "Operation options") var operation: OperationOptions

    @Option(help: ArgumentHelp("A name for display and lists.", valueName: "name"))
    var name = ""

    @Option(help: ArgumentHelp("An operation (op-N or N; a reservation op-rN: one a client program will add later), or every operation of a job (job-N), that must finish first; repeat for several.", valueName: "op"))
    var after: [String] = []




    @Option(help: ArgumentHelp("'any' (run whatever the dependencies' outcomes) or 'success' (cancelled if one fails).", valueName: "any|success"))
    var requires = "any"



    @Option(name: .customLong("label"), help: ArgumentHelp("Only workers with this label may run it; repeat for several.", valueName: "key=value"))
    var labels: [String] = []


    @Flag(help: "Run the command words as one /bin/sh -c script.")
    var shell = false

    @Flag(help: "Wait until it has finished; exit 0 only if it succeeded.")
    var wait = false

    @Flag(help: "Print {\"job\": ID, \"operations\": [{\"id\": ID, \"name\": NAME}]} instead of the operation id.")
    var json = false

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "command"))
    var command: [String] = []

    func run() throws {
        var spec = try operation.spec(requires: requires)
        spec.name = name
        var afterJobs: [JobID] = []
        for text in after {
            switch TargetID(text, bare: { .operation(OperationID($0)) }) {
            case .operation(let id)?: spec.dependencies.append(.id(id))
            case .job(let job)?: afterJobs.append(job)
            case nil: throw fail(.usage, "--after '\(text)' is neither an operation nor a job id (write op-N, op-rN or job-N)")
            }
        }
        for label in labels {
            let parts = label.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty else { throw fail(.usage, "--label '\(label)' is not key=value") }
            spec.labels[String(parts[0])] = String(parts[1])
        }
        let words = command.first == "--" ? Array(command.dropFirst()) : command
        if !words.isEmpty {
            let directory = operation.workingDirectory
            spec.work = .command(shell ? .shell(words.joined(separator: " "), workingDirectory: directory)
                                       : Command(words, workingDirectory: directory))
        } else if shell || operation.cwd != nil {
            throw fail(.usage, "--shell and --cwd need a command after --")
        }

        let connection = try Connection.open(global.endpoint)
        let receipt: JobReceipt
        do {
            for job in afterJobs {  // a whole job: every operation of it (a job is one atomic batch)
                spec.dependencies += try connection.job(job).operations.map { .id($0.id) }
            }
            receipt = try connection.submit(Submission([spec]))
        } catch {
            throw Connection.status(for: error)
        }
        guard let id = receipt.operations.first else { throw fail(.unreachable, "the coordinator accepted no operation") }
        if json {
            print(JSONOutput.receipt(receipt, names: [name]))
        } else {
            print("op-\(id.rawValue)")
        }
        guard wait else { return }
        SignalTrap.install()
        do {
            let info = try WaitCommand.waitForOperation(connection, operation: id, timeout: nil)
            if !json { print("\(info.label): \(JobProgress.word(info.outcome))") }
            if info.outcome != .succeeded { throw ExitStatus.someFailed }
        } catch let error as ClientError {
            throw Connection.status(for: error)
        }
    }
}
