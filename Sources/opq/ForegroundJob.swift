import Foundation
import OPQClient
import OPQCore
import OPQWire

/// A job followed in the foreground until it finishes — `opq run`, `opq map`, `opq add --wait`,
/// `opq submit --wait`: progress while it runs, then the summary; exit status 1 unless every
/// operation succeeded.
///
/// Ctrl-C (or SIGTERM) either cancels the job and waits for the cancelled commands to go (a second
/// signal stops waiting), or leaves the job running on the coordinator, as the caller chooses. On an
/// embedded cluster it then stops the cluster.
struct ForegroundJob {
    enum OnInterrupt {
        /// Cancel the job (`opq run`, `opq map`): the foreground process owns it, as with xargs.
        case cancel
        /// Stop watching; the job goes on (`opq submit --wait`).
        case detach
    }

    let connection: CoordinatorConnection
    let job: UInt64
    /// Operation id → name, for display.
    let names: [UInt64: String]
    /// Heads the summary ("opq run jobs.yaml").
    let title: String
    var verbosity: JobProgress.Verbosity
    var onInterrupt: OnInterrupt
    /// The embedded cluster running the job, when there is one.
    var cluster: LocalCluster?
    var started = Date()
    /// Print the end-of-job report (off when stdout carries JSON).
    var showsSummary = true
    /// Prints the operations' output as they finish (`opq map`, `--output`).
    var output: OutputPrinter?
    /// Called with every operation event (see ``JobProgress/onEvent``).
    var onEvent: ((Opq_V1_OperationEvent) -> Void)?

    init(connection: CoordinatorConnection, receipt: Opq_V1_SubmitAccepted, specs: [OperationSpec], title: String,
         verbosity: JobProgress.Verbosity, onInterrupt: OnInterrupt, cluster: LocalCluster? = nil) {
        self.connection = connection
        job = receipt.job
        var names: [UInt64: String] = [:]
        for (id, spec) in zip(receipt.operations, specs) { names[id] = spec.name }
        self.names = names
        self.title = title
        self.verbosity = verbosity
        self.onInterrupt = onInterrupt
        self.cluster = cluster
    }

    /// Follows the job to its end and prints the summary. Throws ``ExitStatus/someFailed`` unless every
    /// operation succeeded, ``ExitStatus/interrupted`` after a signal, ``ExitStatus/unreachable`` if the
    /// cluster or coordinator went away.
    func run() throws(ExitStatus) {
        let cluster = cluster
        let isAlive = { cluster?.exitedProcess == nil }
        let interactive = isatty(STDOUT_FILENO) == 1
        let progress = JobProgress(connection: connection, scope: .job(job), names: names,
                                   interactive: interactive, verbosity: verbosity)
        let observe = onEvent
        if let output {
            progress.onEvent = { event in
                observe?(event)
                output.changed(event)
            }
            progress.onTurn = { output.turn() }
        } else {
            progress.onEvent = observe
        }
        do {
            // Nothing to show: a Wait costs the coordinator less than a stream of every transition.
            let ending = verbosity == .nothing && !interactive && output == nil && onEvent == nil ? try WaitCommand.blockUntilFinished(connection, job: job, isAlive: isAlive) : try progress.follow(isAlive: isAlive)
            switch ending {
            case .finished:
                output?.finish()
                let summary = try JobSummary.fetch(connection, job: job)
                if showsSummary { summary.print(title: title, elapsed: Date().timeIntervalSince(started), connection: connection) }
                if !summary.allSucceeded { throw ExitStatus.someFailed }
            case .interrupted:
                try interrupted(progress, isAlive: isAlive)
            case .lost:
                let exited = cluster?.exitedProcess
                throw fail(.unreachable, "\(exited?.name ?? "a process of the local cluster") exited unexpectedly:\n\(exited?.logTail() ?? "")")
            }
        } catch let error as ClientError {
            throw Connection.status(for: error)
        } catch let status as ExitStatus {
            throw status
        } catch {
            throw fail(.unreachable, "\(error)")
        }
    }

    private func interrupted(_ progress: JobProgress, isAlive: () -> Bool) throws {
        switch onInterrupt {
        case .detach:
            throw fail(.interrupted, "interrupted; job-\(job) goes on (cancel it with: opq cancel --job job-\(job))")
        case .cancel:
            // One line for the whole job, not one per cancelled operation.
            let cancelled = (try? connection.request(timeout: 2) { $0.cancel.job = job })?.reply.cancelled.operations.count
            printError("opq: interrupted; cancelling job-\(job)" + (cluster == nil ? "" : " and stopping the local cluster")
                       + (cancelled.map { ": \($0) unfinished operation(s) cancelled" } ?? ""))
            progress.isMuted = true
            // Give cancelled commands their kill grace to go; a second signal stops waiting.
            let grace = Double(LocalCluster.killGrace + 2)
            _ = try? progress.follow(signals: 2, deadline: Date().addingTimeInterval(grace), isAlive: isAlive)
            if let cluster {
                if SignalTrap.count >= 2 { cluster.kill() } else { cluster.stop(grace: 2) }
            }
            throw ExitStatus.interrupted
        }
    }
}
