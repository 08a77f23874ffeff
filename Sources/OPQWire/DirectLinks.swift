/// The connections between a coordinator and the workers its own loop's thread serves (the workers of a
/// one-process cluster, `opq-coordinator --local-workers`): each worker's messages go to the coordinator
/// and back in memory — the frames a ZeroMQ socket would carry, or the messages themselves — without the
/// socket.
///
/// Over `inproc://` each message cost libzmq a mailbox command and its wake-up checks on both sides
/// (≈ 27 `getpid` + `poll` pairs per command run, measured with `strace -c`), although sender and
/// receiver are the same thread. A direct link is a queue the other side reads in the same loop.
///
/// Like a ROUTER socket to its DEALERs: every link has a fresh random routing id (``DirectLink/identity``,
/// first byte ≥ 0x80 as a worker's own ids are); the coordinator reads every link's messages with that
/// id in front (``receive()``) and sends to an id (``deliver(_:)``) — to a link closed or unknown,
/// nothing arrives (`ZMQ_ROUTER_MANDATORY`'s "host unreachable"); to a full one (``DirectLink/capacity``),
/// nothing either (its "would block"; the coordinator then treats the worker as lost, as for a socket).
/// A worker's messages queued before it closed its link are still read (a socket's linger).
///
/// Both sides may also pass the message itself (``LinkMessage/message(_:raw:)``): neither encoded nor
/// decoded, only validated by the receiver (in `opq map --local 2 -- true`: the loop's thread 137–140 →
/// 125–132 µs per command). A side that reads frames (``receive()``,
/// ``DirectLink/receive()``) gets such a message encoded, exactly as a socket would carry it.
///
/// Not thread-safe: the coordinator's loop and the workers it hosts use it on that loop's thread only.
/// No CURVE: only workers in the coordinator's own process can hold a link.
public final class DirectLinks {
    /// Links by routing id: the open ones, and closed ones until their last messages are read.
    private var links: [[UInt8]: DirectLink] = [:]
    /// The links in the order they were connected (the coordinator reads them in turn).
    private var order: [DirectLink] = []
    /// Where in ``order`` the next read starts: one message per link in turn, as a ROUTER socket
    /// fair-queues its peers (a worker flooding its link delays the others' messages by one each).
    private var cursor = 0
    /// Messages waiting for the coordinator, over every link.
    public private(set) var pendingForCoordinator = 0

    public init() {}

    /// A new link with a fresh routing id (the worker side's "connect").
    public func connect() -> DirectLink {
        var generator = SystemRandomNumberGenerator()
        var identity: [UInt8]
        repeat {
            identity = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            identity[0] |= 0x80
        } while links[identity] != nil
        let link = DirectLink(identity: identity, links: self)
        links[identity] = link
        order.append(link)
        return link
    }

    /// Whether no link is open or holds messages for the coordinator.
    public var isEmpty: Bool { links.isEmpty }

    /// Whether `identity` is an open link's routing id.
    public func isOpen(_ identity: [UInt8]) -> Bool { links[identity]?.isOpen ?? false }

    /// The next message from a worker, with its link's routing id as the first frame (as a ROUTER socket
    /// gives it); nil when no link holds one. Links take turns: one message from each that has one.
    public func receive() -> [[UInt8]]? {
        while let next = receiveMessage() {
            switch next.message {
            case .frames(let frames): return [next.identity] + frames
            case let .message(message, raw):
                // As a socket would have carried it; one that cannot be encoded never reaches a socket either.
                if let frames = try? Frames.encode(message, raw: raw, to: next.identity) { return frames }
            }
        }
        return nil
    }

    /// The next message from a worker and its link's routing id, as it was sent (frames or the message
    /// itself); nil when no link holds one. Links take turns, as for ``receive()``.
    public func receiveMessage() -> (identity: [UInt8], message: LinkMessage<Opq_V1_WorkerMessage>)? {
        guard pendingForCoordinator > 0 else { return nil }
        for step in 0..<order.count {
            let index = (cursor + step) % order.count
            let link = order[index]
            guard let message = link.toCoordinator.popFirst() else { continue }
            pendingForCoordinator -= 1
            cursor = index + 1
            if !link.isOpen, link.toCoordinator.isEmpty { forget(link) }
            return (link.identity, message)
        }
        return nil
    }

    /// What became of a message to a link.
    public enum Delivery: Equatable, Sendable {
        /// Queued for the worker.
        case delivered
        /// The link is closed (or never existed): nothing arrives.
        case unreachable
        /// The worker has not read ``DirectLink/capacity`` messages: this one is dropped.
        case full
        /// `identity` is no link's: the caller's socket may have the connection.
        case notALink
    }

    /// Queues `frames` (routing id first, then the message's frames, as for a ROUTER socket) for the
    /// worker on that link.
    public func deliver(_ frames: [[UInt8]]) -> Delivery {
        guard let identity = frames.first else { return .notALink }
        return deliver(.frames(Array(frames.dropFirst())), to: identity)
    }

    /// Queues `message` itself (with the raw frames it references) for the worker on the link with routing
    /// id `identity`: nothing is encoded; the worker validates it as it would have decoded it.
    public func deliver(_ message: Opq_V1_CoordinatorToWorker, raw: [[UInt8]] = [], to identity: [UInt8]) -> Delivery {
        deliver(.message(message, raw: raw), to: identity)
    }

    private func deliver(_ message: LinkMessage<Opq_V1_CoordinatorToWorker>, to identity: [UInt8]) -> Delivery {
        guard let link = links[identity] else { return .notALink }
        guard link.isOpen else { return .unreachable }
        guard link.toWorker.count < DirectLink.capacity else { return .full }
        link.toWorker.append(message)
        return .delivered
    }

    fileprivate func closed(_ link: DirectLink) {
        if link.toCoordinator.isEmpty { forget(link) }
    }

    private func forget(_ link: DirectLink) {
        links[link.identity] = nil
        guard let index = order.firstIndex(where: { $0 === link }) else { return }
        order.remove(at: index)
        if index < cursor { cursor -= 1 }
    }

    fileprivate func queued() { pendingForCoordinator += 1 }
}

/// One worker's end of a ``DirectLinks`` connection (its "DEALER socket"). Not thread-safe (see
/// ``DirectLinks``).
public final class DirectLink {
    /// The most messages a direction holds unread: libzmq's default high-water marks of both ends of
    /// an `inproc://` pipe (1,000 each), so a link gives up where the socket did.
    public static let capacity = 2_000

    /// The link's routing id, as the coordinator sees it.
    public let identity: [UInt8]
    /// False once ``close()`` was called.
    public private(set) var isOpen = true
    fileprivate var toCoordinator = LinkQueue<Opq_V1_WorkerMessage>()
    fileprivate var toWorker = LinkQueue<Opq_V1_CoordinatorToWorker>()
    private unowned let links: DirectLinks

    fileprivate init(identity: [UInt8], links: DirectLinks) {
        self.identity = identity
        self.links = links
    }

    /// Queues a message for the coordinator; false (nothing queued) when the link is closed or the
    /// coordinator has not read ``capacity`` messages.
    public func send(_ frames: [[UInt8]]) -> Bool { send(.frames(frames)) }

    /// Queues `message` itself (with the raw frames it references) for the coordinator, unencoded; false
    /// as for ``send(_:)``.
    public func send(_ message: Opq_V1_WorkerMessage, raw: [[UInt8]] = []) -> Bool { send(.message(message, raw: raw)) }

    private func send(_ message: LinkMessage<Opq_V1_WorkerMessage>) -> Bool {
        guard isOpen, toCoordinator.count < Self.capacity else { return false }
        toCoordinator.append(message)
        links.queued()
        return true
    }

    /// The next message from the coordinator as frames (one sent as a message is encoded here); nil when
    /// none waits.
    public func receive() -> [[UInt8]]? {
        while let message = toWorker.popFirst() {
            switch message {
            case .frames(let frames): return frames
            case let .message(message, raw): if let frames = try? Frames.encode(message, raw: raw) { return frames }
            }
        }
        return nil
    }

    /// The next message from the coordinator as it was sent (frames or the message itself); nil when none
    /// waits.
    public func receiveMessage() -> LinkMessage<Opq_V1_CoordinatorToWorker>? { toWorker.popFirst() }

    /// Whether a message from the coordinator waits.
    public var hasMessages: Bool { !toWorker.isEmpty }

    /// Whether ``send(_:)`` would take a message now.
    public var hasRoom: Bool { isOpen && toCoordinator.count < Self.capacity }

    /// Closes the worker's end: what the coordinator had not read yet is still read, what it sends
    /// from now on is unreachable, and what it sent and the worker did not read is dropped.
    public func close() {
        guard isOpen else { return }
        isOpen = false
        toWorker = LinkQueue()
        links.closed(self)
    }
}

/// What one message on a link is: the frames a socket would carry (signature first, no routing id), or
/// the message itself with the raw frames it references (frame reference 1 = `raw[0]`), never encoded.
public enum LinkMessage<Message: WireEnvelope> {
    case frames([[UInt8]])
    case message(Message, raw: [[UInt8]])
}

/// A first-in first-out queue of link messages (an array read from a moving head).
struct LinkQueue<Message: WireEnvelope> {
    private var items: [LinkMessage<Message>?] = []
    private var head = 0

    var count: Int { items.count - head }
    var isEmpty: Bool { head == items.count }

    mutating func append(_ message: LinkMessage<Message>) { items.append(message) }

    mutating func popFirst() -> LinkMessage<Message>? {
        guard head < items.count else { return nil }
        let message = items[head]
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1_024, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return message
    }
}
