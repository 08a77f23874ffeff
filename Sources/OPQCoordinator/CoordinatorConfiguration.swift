#if canImport(Glibc)
import Glibc
#endif
import OPQCore
import OPQJournal
import ZeroMQ

/// Settings of a coordinator. The defaults bind loopback only: opq runs commands, so an open port is
/// remote code execution.
public struct CoordinatorConfiguration: Sendable {
    /// The default worker endpoint's port.
    public static let defaultWorkersPort = 7130
    /// The default client endpoint's port.
    public static let defaultClientsPort = 7131

    /// Where workers connect (ROUTER). `tcp://127.0.0.1:*` picks a free port.
    public var workersEndpoint = "tcp://127.0.0.1:\(defaultWorkersPort)"
    /// Where clients (`opq`, `OPQClient`) connect (ROUTER).
    public var clientsEndpoint = "tcp://127.0.0.1:\(defaultClientsPort)"
    /// Heartbeat interval both ways, in seconds.
    public var heartbeatInterval = 1.0
    /// Missed intervals before a worker is declared lost.
    public var liveness = 3
    /// Seconds between SIGTERM and SIGKILL when a worker stops an attempt.
    public var killGrace = 10.0
    /// Events kept for watchers that resume after a gap.
    public var eventHistory = 100_000
    /// Bytes of events kept for watchers that resume after a gap (progress texts included).
    public var eventHistoryBytes = 64 << 20
    /// Bytes of captured output kept in memory over all operations (oldest dropped first).
    public var outputBudget = 256 << 20
    /// Bytes of each output stream of one operation kept in the output spool (``OutputSpool``); beyond
    /// it the output is cut (the last 64 KiB still come with the finish). Default 1 GiB.
    public var outputSpoolCap = 1 << 30
    /// Bytes the output spool keeps over all operations; the oldest finished operations' output goes
    /// first. Default 8 GiB.
    public var outputSpoolBudget = 8 << 30
    /// Messages kept for one client that does not read its replies before its requests are refused
    /// (``ClientOutbox``).
    public var clientBacklogMessages = 10_000
    /// Bytes kept for one client that does not read its replies before its requests are refused.
    public var clientBacklogBytes = 64 << 20
    /// Messages handled from one socket per loop turn, so timers and the other socket are served.
    public var messagesPerTurn = 4_096
    /// After a turn that dispatched in-process work (handlers), the loop polls without sleeping for up to
    /// this long before it waits (``ZeroMQ/SpinningWait``): the finish of a handler run by a worker in this
    /// process comes within tens of microseconds, sooner than a sleeping thread wakes. Zero = never spin
    /// (the default); `opq-coordinator --local-workers` turns it on (``ZeroMQ/SpinningWait/oneProcessDefault``).
    public var spin: Duration = .zero
    /// The state directory (journal and lock). Nil = no journal: nothing survives a restart. The
    /// executable defaults it to ``StateDirectory/defaultPath(environment:)``.
    public var stateDirectory: String?
    /// How hard each journal commit pushes to disk.
    public var sync = Journal.Sync.processCrash
    /// Seconds attempts recovered from the journal wait for their workers to re-register and report
    /// them, before they get a new attempt. Workers notice a restart within `liveness × heartbeatInterval`
    /// and reconnect within a second or so; a worker that re-registers without an attempt ends its wait at once.
    public var recoveryGrace = 5.0
    /// Seconds a reservation (an id for an operation not submitted yet) lasts unless the client that made
    /// it renews it; then it is given up as if cancelled, so a client that died does not leave the
    /// operations waiting for it waiting forever (``ReservationLeases``). The client library renews
    /// every third of it. `Limits.reservationLeaseRange` (1 s to a day); default 30 s.
    public var reservationLease = Limits.defaultReservationLease
    /// CURVE: both sockets encrypt and authenticate with these keys, and admit only the authorized
    /// public keys (``AuthorizedKeys``). Nil = no encryption, and only loopback or `ipc://` endpoints.
    public var curve: CurveSettings?
    /// Also bind the workers socket to this `inproc://` endpoint, for workers on threads of this process
    /// that use the coordinator's ``Coordinator/context`` (the one-process cluster of `opq run`:
    /// `opq-coordinator --local-workers`). `inproc://` skips libzmq's I/O threads, so a dispatch round
    /// trip costs about half of one between processes. Only this process can reach it; it cannot be
    /// combined with ``curve`` (in-process peers have no key to authenticate). Nil = none.
    public var inProcessWorkersEndpoint: String?

    /// The defaults.
    public init() {}

    /// Why these settings cannot run, or nil: every number within its documented range
    /// (`OPQCore.Limits`), named by property. ``Coordinator/init(configuration:logger:)`` checks it; the
    /// executable checks its flags first, so its errors name the flags.
    public var problem: String? {
        let problems = [
            Limits.durationProblem(heartbeatInterval, name: "heartbeatInterval", positive: true),
            Limits.countProblem(liveness, name: "liveness", range: 1...Limits.maxLiveness),
            Limits.durationProblem(killGrace, name: "killGrace"),
            Limits.durationProblem(recoveryGrace, name: "recoveryGrace"),
            Limits.reservationLeaseProblem(reservationLease, name: "reservationLease"),
            Limits.countProblem(eventHistory, name: "eventHistory", range: 1...Int(Int32.max)),
            Limits.countProblem(eventHistoryBytes, name: "eventHistoryBytes", range: 1...Int.max),
            Limits.countProblem(outputBudget, name: "outputBudget", range: 0...Int.max),
            Limits.countProblem(outputSpoolCap, name: "outputSpoolCap", range: 0...Int.max),
            Limits.countProblem(outputSpoolBudget, name: "outputSpoolBudget", range: 0...Int.max),
            Limits.countProblem(messagesPerTurn, name: "messagesPerTurn", range: 1...1_000_000),
            Limits.countProblem(clientBacklogMessages, name: "clientBacklogMessages", range: 1...Int.max),
            Limits.countProblem(clientBacklogBytes, name: "clientBacklogBytes", range: 1...Int.max),
        ]
        if let problem = problems.compactMap({ $0 }).first { return problem }
        if spin < .zero || spin > SpinningWait.maximum { return "spin must be from 0 to \(SpinningWait.maximum), not \(spin)" }
        if let inProcess = inProcessWorkersEndpoint {
            guard (try? Endpoint(parsing: inProcess))?.isInProcess == true else {
                return "inProcessWorkersEndpoint must be an inproc:// endpoint, not '\(inProcess)'"
            }
            if curve != nil {
                return "inProcessWorkersEndpoint cannot be combined with CURVE: workers inside the process have no key to authenticate"
            }
        }
        return nil
    }

    /// Binds both endpoints as Unix sockets in `directory` (`workers` and `clients`), which is created
    /// mode 0700 if missing and must otherwise be a directory of this user that no one else may enter:
    /// then only this user can connect, unlike loopback TCP, which every local user can reach.
    /// - Returns: the two endpoints, for workers and clients to connect to.
    @discardableResult
    public mutating func usePrivateIPC(in directory: String) throws(EndpointError) -> (workers: String, clients: String) {
        func refuse(_ problem: String) -> EndpointError { EndpointError(endpoint: "ipc://\(directory)", problem: problem) }
        guard directory.hasPrefix("/") else { throw refuse("give an absolute directory path") }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw refuse("cannot create the directory: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(directory, &info) == 0 else { throw refuse("cannot read the directory: \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw refuse("it is not a directory (nor may it be a symbolic link)") }
        guard info.st_uid == getuid() else { throw refuse("the directory belongs to another user (uid \(info.st_uid))") }
        guard info.st_mode & 0o077 == 0 else {
            throw refuse("other users may enter the directory (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 700 it first")
        }
        let base = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        workersEndpoint = "ipc://\(base)/workers"
        clientsEndpoint = "ipc://\(base)/clients"
        return (workersEndpoint, clientsEndpoint)
    }
}

/// The loopback-only rule (DESIGN.md: never bind a non-loopback address without CURVE keys), a small
/// decision over a fully parsed ``Endpoint``: the parser (ZeroMQ's `Endpoint`) refuses source addresses,
/// interfaces and `*`; this policy then requires `ipc://`, `inproc://`, or TCP whose host resolves to
/// loopback addresses only — unless the peers are authenticated (`allowNonLoopback`, true with CURVE),
/// when any address binds, `0.0.0.0` and `[::]` included.
public enum EndpointPolicy {
    /// The endpoint to bind for `text`, parsed; throws unless it may be bound under this policy.
    public static func bindable(_ text: String, allowNonLoopback: Bool = false) throws(EndpointError) -> Endpoint {
        let endpoint = try Endpoint(parsing: text)
        try check(endpoint, as: text, allowNonLoopback: allowNonLoopback)
        return endpoint
    }

    /// Throws unless `endpoint` parses and may be bound (``bindable(_:allowNonLoopback:)`` without the result).
    public static func checkLoopback(_ endpoint: String, allowNonLoopback: Bool = false) throws(EndpointError) {
        _ = try bindable(endpoint, allowNonLoopback: allowNonLoopback)
    }

    /// The decision: `endpoint` (written `text` by the user, for errors) may be bound when only this
    /// machine can reach it, or anywhere with `allowNonLoopback` (for when peers are authenticated:
    /// CURVE). Its host must still resolve.
    public static func check(_ endpoint: Endpoint, as text: String, allowNonLoopback: Bool = false) throws(EndpointError) {
        let isLocal: Bool
        do {
            isLocal = try endpoint.isLocalOnly()
        } catch {
            throw EndpointError(endpoint: text, problem: error.problem)  // named as the user wrote it
        }
        guard isLocal || allowNonLoopback else {
            let addresses = (try? endpoint.addresses().map(\.text).joined(separator: ", ")) ?? ""
            throw EndpointError(endpoint: text, problem: """
                it is reachable from other machines (\(addresses)), and opq runs commands, so an open port is \
                remote code execution. Bind 127.0.0.1, [::1], localhost or ipc://, or give the coordinator CURVE \
                keys (--curve-key with --authorized-workers/--authorized-clients; see 'opq keys generate') to bind \
                other addresses.
                """)
        }
    }
}

/// Settings a coordinator cannot run with (``CoordinatorConfiguration/problem``).
public struct ConfigurationError: Error, CustomStringConvertible {
    /// What is wrong, naming the setting.
    public let description: String
}
