import Foundation
import OPQClient
import OPQRuntime

/// The embedded one-machine cluster of `opq run` and `opq map --local`: the runtime's launcher
/// (``OPQRuntime/LocalCluster``) with a private `opq-coordinator` and N `opq-worker`s on `ipc://`
/// endpoints in a fresh temporary directory, which `stop` removes.
typealias LocalCluster = OPQRuntime.LocalCluster

extension LocalCluster {
    /// Seconds between SIGTERM and SIGKILL for cancelled commands in the embedded cluster.
    static let killGrace = 2

    /// Starts the coordinator and `workerCount` workers (`local-1`, …) of `slots` slots each, found next
    /// to `opq` or on PATH. Every process gets SIGKILL if `opq` dies (started from its main thread).
    static func embedded(workers workerCount: Int, slots: Int) throws -> LocalCluster {
        let cluster = try LocalCluster(binaries: try BinaryDirectory.locate(), prefix: "opq-run", deathSignal: SIGKILL)
        do {
            try cluster.startCoordinator(["--kill-grace", String(killGrace)])
            for k in 1...max(1, workerCount) {
                try cluster.startWorker("local-\(k)", slots: slots, arguments: ["--kill-grace", String(killGrace)])
            }
        } catch {
            cluster.stop()
            throw error
        }
        return cluster
    }

    /// Starts a cluster and connects to it. A failure is printed (with the log of a process that
    /// exited) and becomes exit status 3; the caller stops the cluster it gets.
    static func startConnected(workers: Int, slots: Int) throws(ExitStatus) -> (LocalCluster, CoordinatorClient) {
        let cluster: LocalCluster
        do {
            cluster = try embedded(workers: workers, slots: slots)
        } catch {
            throw fail(.unreachable, "cannot start the local cluster: \(error)")
        }
        do {
            return (cluster, try Connection.open(cluster.clientsEndpoint, probeTimeout: 10, security: ConnectionSecurity.none))
        } catch {
            if let exited = cluster.exitedProcess { printError("\(exited.name) exited:\n\(exited.logTail())") }
            cluster.stop()
            throw error
        }
    }
}

extension ChildProcess {
    /// The last `count` lines of its log under a header naming it (`── local-1 (pid …), last lines of …`).
    func logTail(_ count: Int = 20) -> String { tail(count) }
}
