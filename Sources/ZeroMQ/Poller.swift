import CZeroMQ

/// Readiness conditions a ``Poller`` waits for and reports (`ZMQ_POLLIN`, `ZMQ_POLLOUT`…).
public struct PollEvents: OptionSet, Sendable, Hashable {
    /// The `short` bit mask of `zmq_pollitem_t`.
    public let rawValue: Int16

    /// Wraps a `ZMQ_POLL*` bit mask.
    public init(rawValue: Int16) { self.rawValue = rawValue }

    /// A message can be received (socket) or data read (file descriptor) without blocking.
    public static let readable = PollEvents(rawValue: Int16(ZMQ_POLLIN))
    /// A message can be sent (socket) or data written (file descriptor) without blocking.
    public static let writable = PollEvents(rawValue: Int16(ZMQ_POLLOUT))
    /// An error condition on a raw file descriptor (never reported for sockets).
    public static let error = PollEvents(rawValue: Int16(ZMQ_POLLERR))
}

/// Waits until any of a set of sockets and raw file descriptors is ready (`zmq_poll`'s items and results,
/// without its extra pass: `opq_zmq_poll` in `CZeroMQ`).
///
/// Built once and polled every loop turn: ``poll(timeout:)`` allocates nothing. Items are
/// addressed by the index that ``add(_:events:)`` / ``add(fileDescriptor:events:)`` returned.
///
/// ```swift
/// var poller = Poller()
/// let workers = poller.add(workerSocket)
/// while running {
///     try poller.poll(timeout: msUntilNextDeadline)
///     if poller.isReadable(workers) { … drain workerSocket … }
/// }
/// ```
/// A poller holds its sockets, so it belongs to the thread that owns them. Remove a socket
/// (``remove(at:)``) before closing it; polling a closed socket throws ``ZMQError/Kind/socketClosed``.
public struct Poller {
    /// The C poll set, passed to `zmq_poll` as is; `revents` hold the last poll's results.
    private var items: [zmq_pollitem_t] = []
    /// The socket at each index (`nil` for file descriptors), kept alive and checked for `close()`.
    private var sockets: [Socket?] = []
    /// For each socket item found holding none of its events when they were last read: the socket's
    /// ``Socket/uses`` then; `nil` otherwise. While the count has not moved the socket is quiet: the next
    /// poll waits on its descriptor without reading its events first (`opq_zmq_poll_quiet`).
    private var quietAt: [UInt64?] = []
    /// Per item, for `opq_zmq_poll_quiet`: whether it is quiet (in), whether its events were read (out).
    private var quiet: [UInt8] = []
    private var wasRead: [UInt8] = []
    /// Socket events read by polls so far (a test's view of what quiet sockets save).
    private(set) var socketReads = 0

    /// Creates an empty poller.
    public init() {}

    /// The number of items.
    public var count: Int { items.count }

    /// Watches `socket` for `events`; returns the item's index.
    @discardableResult
    public mutating func add(_ socket: Socket, events: PollEvents = .readable) throws(ZMQError) -> Int {
        let handle = try socket.pollHandle()
        items.append(zmq_pollitem_t(socket: handle, fd: -1, events: events.rawValue, revents: 0))
        sockets.append(socket)
        appendState()
        return items.count - 1
    }

    private mutating func appendState() {
        quietAt.append(nil)
        quiet.append(0)
        wasRead.append(0)
    }

    /// Watches the raw file descriptor `fileDescriptor` (a pipe, a ``Socket/fileDescriptor`` of a
    /// foreign loop…) for `events`; returns the item's index.
    @discardableResult
    public mutating func add(fileDescriptor: Int32, events: PollEvents = .readable) -> Int {
        items.append(zmq_pollitem_t(socket: nil, fd: fileDescriptor, events: events.rawValue, revents: 0))
        sockets.append(nil)
        appendState()
        return items.count - 1
    }

    /// Removes the item at `index`; the indices of later items decrease by one.
    public mutating func remove(at index: Int) {
        items.remove(at: index)
        sockets.remove(at: index)
        quietAt.remove(at: index)
        quiet.remove(at: index)
        wasRead.remove(at: index)
    }

    /// Puts `socket` (or, with nil, nothing: a negative descriptor, never ready) at `index`, waiting for
    /// `events`: a loop whose socket comes and goes keeps its place in a poller it shares (``PollGuest``).
    public mutating func setSocket(_ socket: Socket?, events: PollEvents = .readable, at index: Int) throws(ZMQError) {
        guard let socket else { return setFileDescriptor(-1, events: events, at: index) }
        items[index] = zmq_pollitem_t(socket: try socket.pollHandle(), fd: -1, events: events.rawValue, revents: 0)
        sockets[index] = socket
        quietAt[index] = nil
    }

    /// Puts the file descriptor `fileDescriptor` at `index` (negative: never ready), waiting for `events`.
    public mutating func setFileDescriptor(_ fileDescriptor: Int32, events: PollEvents = .readable, at index: Int) {
        items[index] = zmq_pollitem_t(socket: nil, fd: fileDescriptor, events: events.rawValue, revents: 0)
        sockets[index] = nil
        quietAt[index] = nil
    }

    /// Changes what the item at `index` waits for, e.g. adds `.writable` while output is pending.
    public mutating func setEvents(_ events: PollEvents, at index: Int) {
        if items[index].events != events.rawValue { quietAt[index] = nil }
        items[index].events = events.rawValue
    }

    /// Waits up to `milliseconds` (`-1` = no limit, `0` = just check) until an item is ready.
    /// Returns how many items are ready; read them with ``readyEvents(at:)``.
    ///
    /// A signal interrupting the wait restarts it with the full timeout, so a loop should compute
    /// the timeout from its next deadline every turn.
    @discardableResult
    public mutating func poll(timeout milliseconds: Int) throws(ZMQError) -> Int {
        for index in sockets.indices {
            guard let socket = sockets[index] else { continue }
            items[index].socket = try socket.pollHandle()
            quiet[index] = quietAt[index] == socket.uses ? 1 : 0
        }
        let ready: Int
        do {
            ready = Int(try zmqCall("zmq_poll") {
                items.withUnsafeMutableBufferPointer { buffer in
                    quiet.withUnsafeBufferPointer { quiet in
                        wasRead.withUnsafeMutableBufferPointer { wasRead in
                            opq_zmq_poll_quiet(buffer.baseAddress, Int32(buffer.count), milliseconds, quiet.baseAddress, wasRead.baseAddress)
                        }
                    }
                }
            })
        } catch {
            // Interrupted (EINTR) or failed part-way: what was read is not known, so every socket is read again.
            for index in quietAt.indices { quietAt[index] = nil }
            throw error
        }
        for index in sockets.indices where wasRead[index] != 0 {
            guard let socket = sockets[index] else { continue }
            socketReads += 1
            let uses = socket.notePolled()
            quietAt[index] = items[index].revents == 0 ? uses : nil
        }
        return ready
    }

    /// Forgets the last poll's results (every item reads as not ready until the next poll): for a loop
    /// that hands the same results to several parts of a turn and must not act on one twice.
    public mutating func clearResults() {
        for index in items.indices { items[index].revents = 0 }
    }

    /// The events the last ``poll(timeout:)`` found for the item at `index`.
    public func readyEvents(at index: Int) -> PollEvents {
        PollEvents(rawValue: items[index].revents)
    }

    /// Whether the last ``poll(timeout:)`` found the item at `index` readable.
    public func isReadable(_ index: Int) -> Bool { readyEvents(at: index).contains(.readable) }

    /// Whether the last ``poll(timeout:)`` found the item at `index` writable.
    public func isWritable(_ index: Int) -> Bool { readyEvents(at: index).contains(.writable) }
}

/// A `Poller` holds sockets, which are owned by one thread.
@available(*, unavailable)
extension Poller: Sendable {}

extension Poller {
    /// Milliseconds from now to `deadline`, rounded up (a wait never ends just before its deadline only
    /// to poll again with 0), at least 0: a `poll`/`zmq_poll` timeout.
    public static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return 0 }
        let milliseconds = left.components.seconds * 1000 + (left.components.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}
