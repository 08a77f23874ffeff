import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQJobFile

/// `opq run FILE`: the embedded one-machine mode.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a job file on a private local cluster, show progress, print a summary.",
        discussion: """
            Starts a private opq-coordinator and N opq-worker processes (found next to opq) on ipc:// sockets in a fresh temporary directory, submits FILE, shows progress (one updating line on a terminal, plain lines otherwise), prints a summary — counts per outcome, the slowest operations, and each failure with the last lines of its output — then stops the processes and removes the directory.

            Ctrl-C (or SIGTERM) cancels the job, stops the processes and removes the directory; a second Ctrl-C kills them at once.

            Examples:
              opq run examples/media-pipeline.yaml
              opq run jobs.yaml --workers 4 --slots 2
              opq run jobs.json > run.log     # plain lines when not a terminal
              opq run jobs.yaml --output all  # every operation's output, under a header each
              opq run jobs.yaml --resume      # only what did not succeed last time, and its dependants

            Output: the complete stdout and stderr of each operation that did not succeed is printed when it finishes (--output failed, the default), under a '--- name (op-N) ---' header; --output all prints every operation's, --output none none (opq logs OP prints it later, while the coordinator keeps it).

            Every run records each operation's outcome (by name, with a fingerprint of what it does) in $XDG_STATE_HOME/opq/runs/ (else ~/.local/state/opq/runs/), one file per job file path. --resume runs only the operations that did not succeed last time — failed, cancelled, never finished, new or changed since — and every operation that depends on one of them; the rest keep their success.

            Exit status: 0 every operation succeeded; 1 some failed or were cancelled; 2 usage or job-file error (nothing ran); 3 the local cluster could not be started or reached; 130 interrupted.
            """
    ).subcommandOfOPQ

    @Argument(help: "The job file (YAML, or JSON when it ends in .json).")
    var file: String

    @Option(help: ArgumentHelp("How many local workers to start.", valueName: "n"))
    var workers = 1

    @Option(help: ArgumentHelp("Slots (concurrent operations) per worker (default: the number of CPUs).", valueName: "s"))
    var slots: Int?

    @Option(help: OutputPrinter.selectionHelp(default: .failed))
    var output: OutputPrinter.Selection = .failed

    @Flag(help: "Run only what did not succeed last time (and what depends on it), as recorded by the last opq run of this file.")
    var resume = false

    func validate() throws {
        guard workers >= 1 else { throw ValidationError("--workers must be at least 1") }
        if let slots, slots < 1 { throw ValidationError("--slots must be at least 1") }
    }

    @Flag(help: "Run every operation, also those whose outputs: are up to date with their inputs:.")
    var force = false

    func run() throws {
        let jobFile = try JobFileLoading.load(file, force: force)
        if !jobFile.afterJobs.isEmpty { throw fail(.usage, "\(file): after_jobs names jobs of a running coordinator; use opq submit (opq run starts a fresh one)") }
        // opq run's workers are all there is: an operation larger than them would wait forever (README "Resources").
        let capacity = Resources(cpus: slots ?? ProcessInfo.processInfo.activeProcessorCount,
                                 memory: Int(clamping: ProcessInfo.processInfo.physicalMemory))
        if let tooLarge = jobFile.firstTooLarge(for: capacity, workers: "opq run's workers",
                                                advice: "raise --slots, or submit it to a cluster with larger workers") {
            throw fail(.usage, tooLarge.description)
        }
        SignalTrap.install()
        let started = ForegroundJob.now()
        let record = RunResume(file: file, jobFile: jobFile)
        guard let submission = try record.submission(jobFile.submission, resuming: resume) else { return }
        let (cluster, connection) = try LocalCluster.startConnected(workers: workers, slots: slots ?? ProcessInfo.processInfo.activeProcessorCount)
        defer { cluster.stop() }

        let receipt: JobReceipt
        do {
            receipt = try connection.submit(submission)
        } catch {
            throw JobFileLoading.status(for: error, jobFile: jobFile)
        }
        let slotCount = slots ?? ProcessInfo.processInfo.activeProcessorCount
        print("opq run \(file): job-\(receipt.job.rawValue), \(receipt.operations.count) operations, \(workers) worker(s) × \(slotCount) slots")
        record.accepted(receipt, submission)
        var foreground = ForegroundJob(connection: connection, receipt: receipt, specs: submission.operations,
                                       title: "opq run \(file)", verbosity: .everything, onInterrupt: .cancel, cluster: cluster)
        foreground.started = started
        foreground.output = OutputPrinter.forJob(connection, receipt: receipt, specs: submission.operations, selection: output)
        foreground.onEvent = record.observe
        defer { record.save() }
        try foreground.run()
    }
}
