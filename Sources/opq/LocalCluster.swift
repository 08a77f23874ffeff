import Foundation
import OPQClient
import OPQRuntime
import ZeroMQ

/// The embedded one-machine cluster of `opq run` and `opq map --local`: the runtime's launcher
/// (``OPQRuntime/LocalCluster``) with ONE private `opq-coordinator` process running N workers on threads
/// of its own (`--local-workers`: they talk to it over direct links in memory, the dispatch round trip never leaves
/// the process), its clients endpoint on `ipc://` in a fresh temporary directory, which `stop` removes.
typealias LocalCluster = OPQRuntime.LocalCluster

extension LocalCluster {
    /// Seconds between SIGTERM and SIGKILL for cancelled commands in the embedded cluster.
    static let killGrace = 2
    /// Seconds the coordinator may take to bind its endpoints (open its journal) at start.
    static let startTimeout = 10.0

    /// Starts the coordinator with `workerCount` workers (`local-1`, …) of `slots` slots each inside its
    /// process, found next to `opq` or on PATH, and returns at once: ``connect()`` waits until it listens.
    /// It gets SIGKILL if `opq` dies (started from its main thread); the workers' lease watchdogs then
    /// kill their commands. A failure is printed and becomes exit status 3.
    static func launch(workers workerCount: Int, slots: Int) throws(ExitStatus) -> LocalCluster {
        let cluster: LocalCluster
        do {
            cluster = try LocalCluster(binaries: try BinaryDirectory.locate(), prefix: "opq-run", deathSignal: SIGKILL)
        } catch {
            throw fail(.unreachable, "cannot start the local cluster: \(error)")
        }
        do {
            // No journal: nothing would replay it (the directory goes when the cluster stops, and the
            // coordinator dies with this process), and a commit per turn sits between a command's end and
            // the next one's start.
            try cluster.startOneProcess(workers: max(1, workerCount), slots: slots, arguments: ["--kill-grace", String(killGrace)],
                                        journaled: false)
        } catch {
            cluster.stop()
            throw fail(.unreachable, "cannot start the local cluster: \(error)")
        }
        return cluster
    }

    /// Waits until the coordinator ``launch(workers:slots:)`` started listens, and connects to it. A failure
    /// is printed (with the log of a process that exited) and becomes exit status 3; the caller stops the
    /// cluster.
    func connect() throws(ExitStatus) -> CoordinatorClient {
        do {
            // While the coordinator starts, this process loads the library its connection needs.
            Context.loadLibrary()
            // Its start line comes once both endpoints are bound. Connecting before that meets no ipc://
            // socket file, and libzmq tries again only after its reconnect interval (≈ 100–200 ms, idle
            // time at the start of every `opq run` and `opq map --local`).
            _ = try coordinatorStartLine(within: Self.startTimeout)
        } catch {
            throw fail(.unreachable, "cannot start the local cluster: \(error)")
        }
        do {
            return try Connection.open(clientsEndpoint, probeTimeout: Self.startTimeout, security: ConnectionSecurity.none)
        } catch {
            if let exited = exitedProcess { printError("\(exited.name) exited:\n\(exited.logTail())") }
            throw error
        }
    }

    /// ``launch(workers:slots:)`` then ``connect()``; stops the cluster when it cannot connect.
    static func startConnected(workers: Int, slots: Int) throws(ExitStatus) -> (LocalCluster, CoordinatorClient) {
        let cluster = try launch(workers: workers, slots: slots)
        do {
            return (cluster, try cluster.connect())
        } catch {
            cluster.stop()
            throw error
        }
    }
}

extension ChildProcess {
    /// The last `count` lines of its log under a header naming it (`── local-1 (pid …), last lines of …`).
    func logTail(_ count: Int = 20) -> String { tail(count) }
}
