#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CZeroMQ

/// Flags for sending and receiving (`ZMQ_DONTWAIT`, `ZMQ_SNDMORE`).
public struct MessageFlags: OptionSet, Sendable, Hashable {
    /// The `int` flags of `zmq_send`/`zmq_msg_recv`.
    public let rawValue: Int32

    /// Wraps `ZMQ_*` flag bits.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Never block: a send that cannot proceed returns `.wouldBlock`, a receive with nothing
    /// queued returns `nil`.
    public static let dontWait = MessageFlags(rawValue: ZMQ_DONTWAIT)
    /// (Send only) more frames of the same message follow in a later send call.
    public static let sendMore = MessageFlags(rawValue: ZMQ_SNDMORE)
}

/// A metadata property of the connection a message came on (`zmq_msg_gets`).
public struct MessageProperty: Sendable, Hashable {
    /// The property's name.
    public let rawValue: String

    /// A property named `rawValue` (e.g. one a ZAP handler set in its reply's metadata).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `User-Id`: the user id the ZAP handler returned when it admitted the connection.
    public static let userID = MessageProperty(rawValue: "User-Id")
    /// `Peer-Address`: the peer's IP address (TCP).
    public static let peerAddress = MessageProperty(rawValue: "Peer-Address")
}

/// What became of a send. Not errors: a non-blocking sender acts on each of them.
public enum SendResult: Sendable, Equatable {
    /// The message was queued for sending.
    case sent
    /// The peer's queue is full (`EAGAIN`: `.dontWait` or ``SocketOption/sendTimeout``); nothing
    /// was sent. Retry later, e.g. when ``Poller`` reports the socket writable.
    case wouldBlock
    /// A ROUTER with ``SocketOption/routerMandatory`` has no peer with this routing id
    /// (`EHOSTUNREACH`): the peer is gone. Nothing was sent.
    case hostUnreachable
}

extension Socket {
    /// Sends `frames` as one multipart message (a ROUTER's first frame is the peer's routing id).
    ///
    /// Each frame is copied once, into libzmq. `frames` must not be empty. A message is queued
    /// whole or not at all; a refusal is the result, not an error: `.wouldBlock` or
    /// `.hostUnreachable`.
    @discardableResult
    public func send(_ frames: [[UInt8]], flags: MessageFlags = []) throws(ZMQError) -> SendResult {
        precondition(!frames.isEmpty, "Socket.send: a message has at least one frame")
        let handle = try openHandle("zmq_send")
        let last = frames.count - 1
        for index in frames.indices {
            let frameFlags = index < last ? flags.union(.sendMore) : flags
            let result = try send(handle, frames[index], frameFlags)
            // A refused later frame means libzmq rolled the partial message back (its peer's
            // pipe closed mid-message), so in every case nothing of this message was sent.
            if result != .sent { return result }
        }
        return .sent
    }

    /// Sends one frame; with `.sendMore`, the next send continues the same message.
    @discardableResult
    public func send(frame: [UInt8], flags: MessageFlags = []) throws(ZMQError) -> SendResult {
        try send(try openHandle("zmq_send"), frame, flags)
    }

    /// `zmq_send` of one frame, mapping `EAGAIN` and `EHOSTUNREACH` to results.
    @inline(__always)
    private func send(
        _ handle: UnsafeMutableRawPointer, _ frame: [UInt8], _ flags: MessageFlags
    ) throws(ZMQError) -> SendResult {
        do throws(ZMQError) {
            let sent = try zmqCallUnlessWouldBlock("zmq_send") {
                frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags.rawValue) }
            }
            return sent == nil ? .wouldBlock : .sent
        } catch where error.code == EHOSTUNREACH {
            return .hostUnreachable
        }
    }

    /// Receives one whole multipart message, or `nil` if none is queued (`.dontWait`) or
    /// ``SocketOption/receiveTimeout`` expired.
    ///
    /// On a ROUTER the first frame is the sender's routing id. Throws
    /// ``ZMQError/Kind/contextTerminated`` once the context is closed.
    public func receiveMultipart(flags: MessageFlags = []) throws(ZMQError) -> [[UInt8]]? {
        try receiveMultipart(flags: flags, property: nil)?.frames
    }

    /// ``receiveMultipart(flags:)``, also reading the connection's metadata `property` from the
    /// message (`zmq_msg_gets`), e.g. ``MessageProperty/userID``: what a ZAP handler said about the
    /// peer. The property is nil when the connection does not have it.
    public func receiveMultipart(
        flags: MessageFlags = [], property: MessageProperty?
    ) throws(ZMQError) -> (frames: [[UInt8]], property: String?)? {
        let handle = try openHandle("zmq_msg_recv")
        return try withMessage { message throws(ZMQError) in
            guard try receive(handle, message, flags) else { return nil }
            // A ROUTER makes the routing-id frame itself, without metadata: read it from the first frame that has it.
            func read() -> String? { property.flatMap { name in zmq_msg_gets(message, name.rawValue).map { String(cString: $0) } } }
            var value = read()
            var frames = [bytes(of: message)]
            while zmq_msg_more(message) == 1 {
                // The rest of a multipart message arrives atomically with its first frame.
                _ = try receive(handle, message, [])
                frames.append(bytes(of: message))
                if value == nil { value = read() }
            }
            return (frames, value)
        }
    }

    /// Receives one frame and whether more frames of the same message follow, or `nil` if none
    /// is queued (`.dontWait`) or ``SocketOption/receiveTimeout`` expired.
    public func receiveFrame(flags: MessageFlags = []) throws(ZMQError) -> (frame: [UInt8], more: Bool)? {
        let handle = try openHandle("zmq_msg_recv")
        return try withMessage { message throws(ZMQError) in
            guard try receive(handle, message, flags) else { return nil }
            return (bytes(of: message), zmq_msg_more(message) == 1)
        }
    }

    /// `zmq_msg_recv` into `message`; `false` on `EAGAIN`.
    @inline(__always)
    private func receive(
        _ handle: UnsafeMutableRawPointer, _ message: UnsafeMutablePointer<zmq_msg_t>,
        _ flags: MessageFlags
    ) throws(ZMQError) -> Bool {
        try zmqCallUnlessWouldBlock("zmq_msg_recv") { zmq_msg_recv(message, handle, flags.rawValue) } != nil
    }

    /// Runs `body` with a heap-allocated `zmq_msg_t`, initialised and closed exactly once.
    /// (A `zmq_msg_t` must not move while in use, so it does not live in a Swift variable.)
    @inline(__always)
    private func withMessage<R>(
        _ body: (UnsafeMutablePointer<zmq_msg_t>) throws(ZMQError) -> R
    ) throws(ZMQError) -> R {
        let message = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
        defer { message.deallocate() }
        try zmqCall("zmq_msg_init") { zmq_msg_init(message) }
        defer { _ = try? zmqCall("zmq_msg_close") { zmq_msg_close(message) } }
        return try body(message)
    }

    /// A copy of the frame in `message`.
    @inline(__always)
    private func bytes(of message: UnsafeMutablePointer<zmq_msg_t>) -> [UInt8] {
        let size = zmq_msg_size(message)
        guard size > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            buffer.baseAddress!.initialize(
                from: zmq_msg_data(message).assumingMemoryBound(to: UInt8.self), count: size)
            count = size
        }
    }
}
