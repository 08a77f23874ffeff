import Foundation
import OPQClient
import OPQCore
import OPQRuntime

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

    let connection: CoordinatorClient
    let job: JobID
    /// Operation id → name, for display.
    let names: [OperationID: String]
    /// Where the submission left the coordinator's event stream: the job is followed from there.
    let streamPosition: JobReceipt.StreamPosition?
    /// Heads the summary ("opq run jobs.yaml").
    let title: String
    var verbosity: JobProgress.Verbosity
    var onInterrupt: OnInterrupt
    /// The embedded cluster running the job, when there is one.
    var cluster: LocalCluster?
    /// When it started, on the runtime clock (``now()``): the summary's elapsed time.
    var started = ForegroundJob.now()
    /// Print the end-of-job report (off when stdout carries JSON).
    var showsSummary = true
    /// Prints the operations' output as they finish (`opq map`, `--output`).
    var output: OutputPrinter?
    /// Called with every operation event (see ``JobProgress/onEvent``).
    var onEvent: ((RemoteEvent.StateChange) -> Void)?
    /// How long the coordinator may hold the job's events to send them together (``JobProgress/eventDelay``).
    var eventDelay = JobProgress.batchedEventDelay

    /// Now on the runtime clock (``MonotonicClock``: Unix seconds that never jump), where the CLI's
    /// deadlines and elapsed times are read.
    static func now() -> Double { MonotonicClock.now() }

    init(connection: CoordinatorClient, receipt: JobReceipt, specs: [OperationSpec], title: String,
         verbosity: JobProgress.Verbosity, onInterrupt: OnInterrupt, cluster: LocalCluster? = nil) {
        self.connection = connection
        job = receipt.job
        var names: [OperationID: String] = [:]
        for (id, spec) in zip(receipt.operations, specs) { names[id] = spec.name }
        self.names = names
        streamPosition = receipt.streamPosition
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
        let isAlive = { cluster?.exitedProcessNow == nil }
        if cluster != nil { WakePipe.wakeOnChildExit() }  // a crashed local process ends the wait at once
        let interactive = isatty(STDOUT_FILENO) == 1
        let progress = JobProgress(connection: connection, scope: .job(job), names: names,
                                   interactive: interactive, verbosity: verbosity)
        progress.eventDelay = eventDelay
        progress.startsAt = streamPosition
        let observe = onEvent
        if let output {
            progress.onEvent = { event in
                observe?(event)
                output.changed(event)
            }
            if output.wantsRunningOutput {
                progress.includesOutput = true
                progress.onOutput = { output.received($0) }
            }
        } else {
            progress.onEvent = observe
        }
        do {
            // Nothing to show: a Wait costs the coordinator less than a stream of every transition.
            let ending = verbosity == .nothing && !interactive && output == nil && onEvent == nil ? try WaitCommand.blockUntilFinished(connection, job: job, isAlive: isAlive) : try progress.follow(isAlive: isAlive)
            switch ending {
            case .finished:
                output?.finish()
                let summary = try JobSummary.fetchReport(connection, job: job)
                if showsSummary { summary.print(title: title, elapsed: Self.now() - started, connection: connection) }
                if !summary.allSucceeded { throw ExitStatus.someFailed }
            case .interrupted:
                try interrupted(progress, isAlive: isAlive)
            case .lost:
                let exited = cluster?.exitedProcessNow
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

    private func interrupted(_ progress: JobProgress, isAlive: @escaping () -> Bool) throws {
        switch onInterrupt {
        case .detach:
            throw fail(.interrupted, "interrupted; job-\(job.rawValue) goes on (cancel it with: opq cancel --job job-\(job.rawValue))")
        case .cancel:
            // One line for the whole job, not one per cancelled operation.
            let cancelled = (try? connection.cancel(.job(job), timeout: 2))?.count
            printError("opq: interrupted; cancelling job-\(job.rawValue)" + (cluster == nil ? "" : " and stopping the local cluster")
                       + (cancelled.map { ": \($0) unfinished operation(s) cancelled" } ?? ""))
            progress.isMuted = true
            // Give cancelled commands their kill grace to go; a second signal stops waiting.
            let grace = Double(LocalCluster.killGrace + 2)
            _ = try? progress.follow(signals: 2, deadline: Self.now() + grace, isAlive: isAlive)
            if let cluster {
                if SignalTrap.count >= 2 { cluster.kill() } else { cluster.stop(grace: 2) }
            }
            throw ExitStatus.interrupted
        }
    }
}

extension LocalCluster {
    /// A process of the cluster that has exited, reaped or not. A zombie counts (`waitid` with `WNOWAIT`
    /// looks without reaping), so the answer is never behind the SIGCHLD that woke a wait (see
    /// ``WakePipe``), whereas ``exitedProcess`` sees an exit only once the runtime's reaper thread has
    /// recorded it.
    var exitedProcessNow: ChildProcess? {
        processes.first { process in
            var info = siginfo_t()
            if waitid(P_PID, id_t(process.pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0 { return errno == ECHILD || !process.isRunning }
            return info.si_signo == SIGCHLD || !process.isRunning
        }
    }
}
