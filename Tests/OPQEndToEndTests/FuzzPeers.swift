import Foundation
import OPQWire
import Testing
import ZeroMQ

/// The hostile side of `CoordinatorFuzzTests`: DEALER sockets on the coordinator's clients socket and on
/// its workers socket (worker names `fuzz-w0`, `fuzz-w1`, …; a fresh routing id per connection, as real
/// workers draw one: see `reconnect`). They send what ``HostileMessages`` makes,
/// read everything the coordinator sends back (so its pipes never fill) and check that each message
/// decodes and validates, and answer "has everything I sent been handled?" with a probe.
struct FuzzPeers {
    let context: Context
    let clientsEndpoint: String
    let workersEndpoint: String
    private(set) var clients: [Socket] = []
    private(set) var workers: [Socket] = []
    /// Messages from the coordinator that did not decode or validate (the first few).
    private(set) var invalidReplies: [String] = []
    /// Messages received from the coordinator.
    private(set) var received = 0

    var count: Int { clients.count }

    init(_ context: Context, cluster: TestCluster, count: Int) throws {
        self.context = context
        clientsEndpoint = cluster.clientsEndpoint
        workersEndpoint = cluster.workersEndpoint
        for peer in 0..<count {
            clients.append(try socket(.clients, peer))
            workers.append(try socket(.workers, peer))
        }
    }

    /// Connections opened so far (part of each worker peer's routing id).
    private var connections = 0

    private mutating func socket(_ target: HostileMessages.Target, _ peer: Int) throws -> Socket {
        let socket = try context.socket(.dealer)
        try socket.set(.linger, 0)
        try socket.set(.sendTimeout, 100)
        connections += 1
        if target == .workers {
            try socket.set(.routingID, Array("\(HostileMessages.workerName(peer))-\(connections)".utf8))
            try socket.connect(workersEndpoint)
        } else {
            try socket.connect(clientsEndpoint)
        }
        return socket
    }

    /// Closes peer `peer`'s socket and opens a new one (the coordinator sees a disconnect, then a new
    /// connection). A worker peer keeps its name but not its routing id: libzmq's ROUTER without
    /// `ROUTER_HANDOVER` ignores a connection whose routing id is still held by the old one (which stays
    /// until the coordinator has read what is queued on it) and never reads that connection again
    /// (docs/known-issues.md); real workers draw a fresh routing id per connection for that reason.
    mutating func reconnect(_ target: HostileMessages.Target, _ peer: Int) throws {
        if target == .workers {
            workers[peer].close()
            workers[peer] = try socket(.workers, peer)
        } else {
            clients[peer].close()
            clients[peer] = try socket(.clients, peer)
        }
    }

    /// Sends `message`, reading replies while the coordinator's pipe is full; false when it takes
    /// nothing for 60 s.
    mutating func send(_ message: HostileMessages.Message) throws -> Bool {
        try deliver(message.frames, on: message.target == .clients ? clients[message.peer] : workers[message.peer])
    }

    /// Sends `frames` on `socket` (whose pipe may be full while the coordinator catches up), reading
    /// replies meanwhile; false when nothing could be sent for 60 s.
    private mutating func deliver(_ frames: [[UInt8]], on socket: Socket) throws -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while try socket.send(frames) != .sent {
            guard Date() < deadline else { return false }
            drain()
        }
        return true
    }

    /// Reads everything the coordinator has sent so far, checking each message.
    mutating func drain() {
        for peer in clients.indices { while receive(clients[peer], from: .clients) != nil {} }
        for peer in workers.indices { while receive(workers[peer], from: .workers) != nil {} }
    }

    /// Asks every peer's connection a question whose answer comes only after everything the peer sent
    /// before it was handled: a ListQueues for clients, a Register (no slots, no queues) for workers.
    /// A question is asked again every 10 s until answered: a peer too starved to answer libzmq's
    /// heartbeats for 5 s is dropped by the coordinator's clients socket, and what was in flight is lost
    /// with the connection (the DEALER reconnects by itself). Returns the peers not answered within
    /// `seconds` (`client 0`, `worker 2`), empty when all were; `probesRepeated` counts the repeats.
    /// Gives up early once `alive` says the coordinator is gone.
    mutating func probe(within seconds: Double, while alive: () -> Bool) throws -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        var pending = Set(clients.indices.map { Peer.client($0) } + workers.indices.map { Peer.worker($0) })
        var asked = Date.distantPast
        while !pending.isEmpty, Date() < deadline, alive() {
            if Date().timeIntervalSince(asked) >= 10 {
                if asked != .distantPast { probesRepeated += pending.count }
                asked = Date()
                for peer in pending {
                    guard try ask(peer) else { return ["\(peer) (its probe could not be sent)"] }
                }
            }
            var poller = Poller()
            for socket in clients + workers { _ = try poller.add(socket) }
            guard try poller.poll(timeout: 100) > 0 else { continue }
            for (peer, socket) in clients.enumerated() {
                while let message = receive(socket, from: .clients) {
                    if case .toClient(let reply) = message, case .reply(let answer) = reply.body, answer.requestID == Self.probeID + UInt64(peer) {
                        pending.remove(.client(peer))
                    }
                }
            }
            for (peer, socket) in workers.enumerated() {
                while let message = receive(socket, from: .workers) {
                    // A welcome, or a refusal of the name (the peer's last session may still be live):
                    // either way everything the connection sent before was handled.
                    if case .toWorker(let order) = message {
                        switch order.body {
                        case .welcome, .disconnect: pending.remove(.worker(peer))
                        default: break
                        }
                    }
                }
            }
        }
        return pending.map(\.description).sorted()
    }

    /// Probes repeated because the first went unanswered for 10 s (see `probe(within:)`).
    private(set) var probesRepeated = 0
    static let probeID = UInt64.max >> 3

    enum Peer: Hashable, CustomStringConvertible {
        case client(Int), worker(Int)
        var description: String {
            switch self {
            case .client(let peer): "client \(peer)"
            case .worker(let peer): "worker \(peer)"
            }
        }
    }

    private mutating func ask(_ peer: Peer) throws -> Bool {
        switch peer {
        case .client(let peer):
            let probe = try Frames.encode(Opq_V1_ClientRequest.request(Self.probeID + UInt64(peer)) { $0.listQueues = Opq_V1_ListQueues() })
            return try deliver(probe, on: clients[peer])
        case .worker(let peer):
            let register = Opq_V1_WorkerMessage.with {
                $0.register = .with {
                    $0.protocolVersion = WireLimits.protocolVersion
                    $0.workerName = HostileMessages.workerName(peer)
                    $0.queueFilter = .with { $0.queues = [] }
                }
            }
            return try deliver(try Frames.encode(register), on: workers[peer])
        }
    }

    enum Received {
        case toClient(Opq_V1_CoordinatorToClient)
        case toWorker(Opq_V1_CoordinatorToWorker)
        case invalid
    }

    /// One message from `socket`, decoded and validated as what the coordinator sends on that socket;
    /// nil when nothing is waiting.
    private mutating func receive(_ socket: Socket, from target: HostileMessages.Target) -> Received? {
        guard let frames = try? socket.receiveMultipart(flags: .dontWait) else { return nil }
        received += 1
        do {
            if target == .clients { return .toClient(try Frames.decode(frames, as: Opq_V1_CoordinatorToClient.self).message) }
            return .toWorker(try Frames.decode(frames, as: Opq_V1_CoordinatorToWorker.self).message)
        } catch {
            if invalidReplies.count < 8 { invalidReplies.append("to \(target): \(error)") }
            return .invalid
        }
    }

    func close() {
        for socket in clients + workers { socket.close() }
    }
}
