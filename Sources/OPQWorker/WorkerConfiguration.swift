import Foundation
import OPQCore
import ZeroMQ

/// How a ``WorkerAgent`` connects to its coordinator and what it offers it.
///
/// Only ``coordinator`` has no default. Until the coordinator's `Welcome` arrives the agent uses
/// ``heartbeatInterval`` and ``liveness`` for itself; after it, the coordinator's values.
public struct WorkerConfiguration: Sendable {
    /// The coordinator's worker endpoint (its workers' ROUTER), e.g. `tcp://127.0.0.1:7130`.
    public var coordinator: String
    /// The worker's stable, unique name (1–255 bytes). Default: `host-pid`. It is bound to the worker's
    /// session when it registers: while that session lives, the coordinator refuses the name to anyone
    /// else (the connection's ZeroMQ routing id is random, never the name).
    public var name: String
    /// How many attempts run at once (the local queue's `maxConcurrentOperationCount`); at least 1.
    public var slots: Int
    /// The queues served; nil = every queue, an empty set = none.
    public var queues: Set<String>?
    /// Placement labels offered to operations that ask for them (e.g. `gpu=1`).
    public var labels: [String: String]
    /// CPUs offered to operations' `cpus:` (README "Resources"); nil = as many as ``slots``.
    public var cpus: Int? = nil
    /// Bytes of memory offered to operations' `memory:`; nil = not announced (the coordinator then
    /// does not check memory on this worker). `opq-worker` announces the machine's memory by default.
    public var memory: Int? = nil
    /// Seconds between SIGTERM and SIGKILL when a command is killed, unless the dispatch names a
    /// positive grace of its own.
    public var killGracePeriod: Double
    /// Seconds between heartbeats before the coordinator's `Welcome` says otherwise.
    public var heartbeatInterval: Double
    /// Missed heartbeat intervals before the coordinator is declared lost (before `Welcome`: also how
    /// long connecting and registering may take). After `Welcome`, the coordinator's liveness × interval
    /// is the worker's lease: the commands it runs are killed when it is not renewed in time.
    public var liveness: Int
    /// The first delay before reconnecting after losing the coordinator; it doubles on every failed
    /// attempt up to ``maximumReconnectDelay`` and starts over after a `Welcome`.
    public var initialReconnectDelay: Double
    /// The longest delay between reconnection attempts.
    public var maximumReconnectDelay: Double
    /// The coordinator's CURVE public key (Z85). Set = the connection is encrypted and the server is
    /// authenticated; nil = plain TCP (only for loopback or `ipc://`).
    public var curveServerKey: String?
    /// This worker's CURVE key pair; nil with a ``curveServerKey`` = a fresh pair per connection.
    public var curveKeys: CurveKeyPair?
    /// While none of its commands runs, the socket thread polls without sleeping for up to this long
    /// before it waits (``ZeroMQ/SpinningWait``): a handler's finish or the coordinator's next dispatch
    /// comes within tens of microseconds when the coordinator is in this process, sooner than a sleeping
    /// thread wakes. Zero = never (the default); `opq-coordinator --local-workers` gives its workers its `--spin`.
    public var spin: Duration = .zero

    /// The default worker endpoint of a coordinator on this machine.
    public static let defaultCoordinator = "tcp://127.0.0.1:7130"

    /// Creates a configuration; see the properties for the meaning and defaults of each value.
    public init(
        coordinator: String = WorkerConfiguration.defaultCoordinator,
        name: String = WorkerConfiguration.defaultName(),
        slots: Int = 1,
        queues: Set<String>? = nil,
        labels: [String: String] = [:],
        killGracePeriod: Double = RunRequest.defaultKillGracePeriod,
        heartbeatInterval: Double = 1,
        liveness: Int = 3,
        initialReconnectDelay: Double = 1,
        maximumReconnectDelay: Double = 32,
        curveServerKey: String? = nil,
        curveKeys: CurveKeyPair? = nil
    ) {
        self.coordinator = coordinator
        self.name = name
        self.slots = slots
        self.queues = queues
        self.labels = labels
        self.killGracePeriod = killGracePeriod
        self.heartbeatInterval = heartbeatInterval
        self.liveness = liveness
        self.initialReconnectDelay = initialReconnectDelay
        self.maximumReconnectDelay = maximumReconnectDelay
        self.curveServerKey = curveServerKey
        self.curveKeys = curveKeys
    }

    /// `host-pid`: unique among the workers of one machine, and readable in listings.
    public static func defaultName() -> String {
        "\(hostName)-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// This machine's host name (without a domain), for `Register.host` and default names.
    public static var hostName: String {
        let full = ProcessInfo.processInfo.hostName
        return full.split(separator: ".").first.map(String.init) ?? full
    }

    /// This configuration offering `cpus` CPUs and `memory` bytes (README "Resources").
    public func with(cpus: Int?, memory: Int?) -> WorkerConfiguration {
        var configuration = self
        configuration.cpus = cpus
        configuration.memory = memory
        return configuration
    }

    /// What is wrong with this configuration, in words a user can act on; nil if nothing is.
    public var problem: String? {
        let nameBytes = name.utf8.count
        if nameBytes == 0 || nameBytes > 255 { return "the worker name must be 1 to 255 bytes long, not \(nameBytes)" }
        if name.utf8.first == 0 { return "the worker name must not start with a NUL byte" }
        if slots < 1 { return "a worker needs at least one slot, not \(slots)" }
        if let cpus, let problem = Limits.countProblem(cpus, name: "cpus", range: 1...Limits.maxCpus) { return problem }
        if let memory, !(0...Limits.maxMemory).contains(memory) {
            return "memory must be from 0 to \(ByteSize.format(Limits.maxMemory)), not \(memory) bytes"
        }
        if !(killGracePeriod >= 0 && killGracePeriod.isFinite) { return "the kill grace period must be ≥ 0 seconds, not \(killGracePeriod)" }
        if !(heartbeatInterval > 0 && heartbeatInterval.isFinite) {
            return "the heartbeat interval must be a positive number of seconds, not \(heartbeatInterval)"
        }
        if liveness < 1 { return "liveness must be at least 1 missed heartbeat, not \(liveness)" }
        if spin < .zero || spin > SpinningWait.maximum { return "the spin must be from 0 to \(SpinningWait.maximum), not \(spin)" }
        if !(initialReconnectDelay > 0 && maximumReconnectDelay >= initialReconnectDelay) {
            return "reconnect delays must satisfy 0 < initial (\(initialReconnectDelay)) ≤ maximum (\(maximumReconnectDelay))"
        }
        return nil
    }
}

/// The delays between reconnection attempts: initial, doubling up to the maximum, reset after a welcome.
struct ReconnectBackoff {
    let initial: Double
    let maximum: Double
    private var next: Double

    init(initial: Double, maximum: Double) {
        self.initial = initial
        self.maximum = maximum
        next = initial
    }

    /// The delay before the next attempt; doubles the one after.
    mutating func take() -> Double {
        defer { next = min(next * 2, maximum) }
        return next
    }

    /// A connection succeeded: start over from the initial delay.
    mutating func reset() { next = initial }
}
