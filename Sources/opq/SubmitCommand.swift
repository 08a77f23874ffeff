import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQJobFile

/// `opq submit FILE`: send a job file to a running coordinator.
struct SubmitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Submit a job file to a running coordinator and print the job id.",
        discussion: """
            The file is checked completely first (syntax, fields, dependencies, cycles); a file with any error submits nothing and exits with status 2, naming the file, line and field.

            Examples:
              opq submit jobs.yaml                 # prints e.g. job-4
              opq wait "$(opq submit jobs.yaml)"
              opq submit jobs.yaml --wait          # progress, then exit 0 or 1
              opq submit encode.yaml --after job-4 # starts once job-4 has finished
              opq submit jobs.yaml --wait --output failed   # and the output of what did not succeed
              opq submit jobs.yaml --json   # {"job": 4, "operations": [{"id": 17, "name": …}]}
              opq --coordinator tcp://127.0.0.1:7131 submit jobs.json
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The job file (YAML, or JSON when it ends in .json).")
    var file: String

    @Flag(help: "Wait until the job has finished; exit 0 only if every operation succeeded.")
    var wait = false

    @Option(help: OutputPrinter.selectionHelp(default: .none))
    var output: OutputPrinter.Selection = .none

    @Flag(help: "With --wait: no progress lines, only the job id and the summary.")
    var quiet = false

    @Flag(help: "Print {\"job\": ID, \"operations\": [{\"id\": ID, \"name\": NAME}, ...]} instead of the job id.")
    var json = false

    @Flag(help: "Run every operation, also those whose outputs: are up to date with their inputs:.")
    var force = false

    @Option(help: ArgumentHelp("Start only after this job has finished (repeatable; with requires: success, only if all of it succeeded).",
                               valueName: "job-N"))
    var after: [String] = []

    func validate() throws {
        if output != .none && !wait { throw ValidationError("--output prints while waiting: add --wait (or read it later with opq logs OP)") }
        if quiet && !wait { throw ValidationError("--quiet quiets --wait's progress; add --wait") }
    }

    func run() throws {
        let loaded = try JobFileLoading.load(file, force: force)
        let connection = try Connection.open(global.endpoint)
        let jobFile = try JobFileLoading.waitingForJobs(loaded, adding: after, connection: connection)
        let receipt: JobReceipt
        do {
            // One key per invocation: a resend after a timeout returns the first receipt, not a second job.
            receipt = try connection.submit(jobFile.submission, idempotencyKey: "opq-submit-\(UUID().uuidString)")
        } catch {
            throw JobFileLoading.status(for: error, jobFile: jobFile)
        }
        let specs = jobFile.submission.operations
        if json {
            print(JSONOutput.receipt(receipt, names: specs.map(\.name)))
        } else {
            print("job-\(receipt.job.rawValue)")
        }
        guard wait else { return }
        SignalTrap.install()
        if json {
            // Scripts get the JSON at once and the outcome as the exit status.
            do {
                if !(try WaitCommand.waitForJob(connection, job: receipt.job)).allSucceeded { throw ExitStatus.someFailed }
            } catch let error as ClientError {
                throw Connection.status(for: error)
            }
            return
        }
        var foreground = ForegroundJob(connection: connection, receipt: receipt, specs: specs, title: "job-\(receipt.job.rawValue)",
                                       verbosity: quiet ? .nothing : .everything, onInterrupt: .detach)
        foreground.output = OutputPrinter.forJob(connection, receipt: receipt, specs: specs, selection: output)
        try foreground.run()
    }
}
