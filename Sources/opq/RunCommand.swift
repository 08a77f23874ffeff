import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQJobFile
import OPQWire

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

            Exit status: 0 every operation succeeded; 1 some failed or were cancelled; 2 usage or job-file error (nothing ran); 3 the local cluster could not be started or reached; 130 interrupted.
            """
    )

    @Argument(help: "The job file (YAML, or JSON when it ends in .json).")
    var file: String

    @Option(help: ArgumentHelp("How many local workers to start.", valueName: "n"))
    var workers = 1

    @Option(help: ArgumentHelp("Slots (concurrent operations) per worker (default: the number of CPUs).", valueName: "s"))
    var slots: Int?

    func validate() throws {
        guard workers >= 1 else { throw ValidationError("--workers must be at least 1") }
        if let slots, slots < 1 { throw ValidationError("--slots must be at least 1") }
    }

    func run() throws {
        let jobFile = try JobFileLoading.load(file)
        SignalTrap.install()
        let started = Date()
        let cluster: LocalCluster
        do {
            cluster = try LocalCluster(workers: workers, slots: slots ?? ProcessInfo.processInfo.activeProcessorCount)
        } catch {
            throw fail(.unreachable, "cannot start the local cluster: \(error)")
        }
        defer { cluster.stop() }
        let connection: CoordinatorConnection
        do {
            connection = try Connection.open(cluster.clientsEndpoint, probeTimeout: 10)
        } catch {
            if let exited = cluster.exitedProcess { printError("\(exited.name) exited:\n\(exited.logTail())") }
            throw error
        }

        let receipt: Opq_V1_SubmitAccepted
        do {
            receipt = try connection.submit(jobFile.submission)
        } catch {
            throw JobFileLoading.status(for: error, jobFile: jobFile)
        }
        var names: [UInt64: String] = [:]
        for (id, spec) in zip(receipt.operations, jobFile.submission.operations) { names[id] = spec.name }
        let interactive = isatty(STDOUT_FILENO) == 1
        print("opq run \(file): job-\(receipt.job), \(names.count) operations, \(workers) worker(s) × \(slots ?? ProcessInfo.processInfo.activeProcessorCount) slots")
        let progress = JobProgress(connection: connection, job: receipt.job, names: names, interactive: interactive)

        do {
            switch try progress.follow(isAlive: { cluster.exitedProcess == nil }) {
            case .finished:
                let summary = try JobSummary.fetch(connection, job: receipt.job)
                summary.print(title: "opq run \(file)", elapsed: Date().timeIntervalSince(started), connection: connection)
                if !summary.allSucceeded { throw ExitStatus.someFailed }
            case .interrupted:
                printError("opq: interrupted; cancelling job-\(receipt.job) and stopping the local cluster")
                try? connection.request(timeout: 2) { $0.cancel.job = receipt.job }
                // Give cancelled commands their kill grace to go; a second signal stops waiting.
                _ = try? progress.follow(signals: 2, deadline: Date().addingTimeInterval(Double(LocalCluster.killGrace)! + 2),
                                         isAlive: { cluster.exitedProcess == nil })
                if SignalTrap.count >= 2 { cluster.kill() } else { cluster.stop(grace: 2) }
                throw ExitStatus.interrupted
            case .lost:
                let exited = cluster.exitedProcess
                throw fail(.unreachable, "\(exited?.name ?? "a process of the local cluster") exited unexpectedly:\n\(exited?.logTail() ?? "")")
            }
        } catch let error as ClientError {
            throw Connection.status(for: error)
        }
    }
}
