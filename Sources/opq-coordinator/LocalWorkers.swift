import Foundation
import Logging
import OPQCoordinator
import OPQWorker

/// The workers of a one-process cluster (`opq-coordinator --local-workers N`, what `opq run` and
/// `opq map --local` start): N ``Worker``s with the built-in handlers on threads of this process, named
/// `local-1`, `local-2`, …, each talking to the coordinator over a direct link
/// (``OPQCoordinator/Coordinator/directLinks``): the same frames a socket would carry, queued in memory
/// and read by the coordinator's loop in the same turn. The dispatch path is made of round trips; over
/// `inproc://` (``CoordinatorConfiguration/inProcessWorkersEndpoint``, still bound for workers a program
/// hosts on threads of its own) each message cost libzmq a mailbox command and its wake-up checks.
///
/// Each worker keeps what a separate `opq-worker` has — its connection, local queue and lease watchdog
/// process (its commands are killed when its lease ends, or when this process dies) — but no socket
/// thread: the coordinator's loop serves it (``OPQWorker/Worker/hosted(directLinks:)``), so the messages between them
/// are read by the loop's next poll, which returns at once, instead of waking another thread.
///
/// Stopping goes as ``OPQRuntime/LocalCluster/stop(grace:)`` goes for processes: the workers first (they
/// take no new work and let running commands finish for up to the kill grace, then stop them and hand
/// them back; they report and say goodbye), then the coordinator. A second stop makes the workers hand
/// their attempts back at once; more change nothing.
// @unchecked Sendable: `stopping` and `failure` are guarded by `lock`; the rest is immutable (workers and the coordinator are thread-safe for the calls made here).
final class LocalWorkers: @unchecked Sendable {
    /// Where the coordinator's workers socket is bound for them.
    static let endpoint = "inproc://opq-local-workers"

    /// The workers, `local-1` first.
    let workers: [Worker]
    private let coordinator: Coordinator
    private let logger: Logger
    /// Seconds running commands may take to finish once a stop was asked, before they are handed back.
    private let drainLimit: Double
    private let lock = NSLock()
    private var stopping = false
    private var failed: String?

    /// Makes `count` workers of `slots` slots each (CPUs = slots, the machine's memory, as `opq-worker`
    /// offers by default) for `coordinator`, which must have bound ``endpoint``; nothing runs until ``start()``.
    init(count: Int, slots: Int, killGrace: Double, heartbeat: Double, coordinator: Coordinator, logger: Logger) throws {
        self.coordinator = coordinator
        self.logger = logger
        drainLimit = killGrace
        let memory = Int(clamping: ProcessInfo.processInfo.physicalMemory)
        workers = try (1...max(1, count)).map { k in
            let configuration = WorkerConfiguration(coordinator: Self.endpoint, name: "local-\(k)", slots: slots,
                                                    killGracePeriod: killGrace, heartbeatInterval: heartbeat)
                .with(cpus: slots, memory: memory)
            return try Worker(configuration: configuration, logger: logger, context: coordinator.context)
        }
    }

    /// Hands every worker to the coordinator's loop, which serves it on its own thread from its first
    /// turn (``Coordinator/host(_:)``: a command's end, the next dispatch and the next spawn take no
    /// thread wake-up); call before the loop runs, from its thread. A worker that ends with an error is
    /// logged and stops the whole cluster: ``failure`` says why.
    /// - Throws: when a worker cannot be set up at all (no lease watchdog process, no file descriptors).
    func start() throws {
        for worker in workers {
            coordinator.host(try worker.hosted(directLinks: coordinator.directLinks))
            Thread.detachNewThread { [self] in
                do {
                    try worker.waitUntilStopped()
                } catch {
                    logger.error("a local worker stopped with an error; stopping the cluster", metadata: [
                        "worker.id": "\(worker.configuration.name)", "error": "\(error)",
                    ])
                    lock.withLock { if failed == nil { failed = "local worker \(worker.configuration.name) stopped: \(error)" } }
                    stop(reason: "a local worker failed")
                }
            }
        }
    }

    /// Why a worker ended on its own, or nil.
    var failure: String? { lock.withLock { failed } }

    /// Stops the workers, then the coordinator; returns at once, safe from any thread and any number of
    /// times (see the type's documentation).
    func stop(reason: String) {
        let first = lock.withLock {
            defer { stopping = true }
            return !stopping
        }
        for worker in workers { worker.stop(reason: reason) }
        guard first else { return }
        Thread.detachNewThread { [self] in
            let deadline = Date().addingTimeInterval(drainLimit)
            let drained = workers.allSatisfy { (try? $0.waitUntilStopped(timeout: max(0, deadline.timeIntervalSinceNow))) != false }
            if !drained {
                logger.notice("local workers: running commands did not finish within the kill grace; stopping them")
                for worker in workers { worker.stop(handBack: true, reason: reason) }
            }
            for worker in workers { _ = try? worker.waitUntilStopped() }
            coordinator.stop()
        }
    }
}
