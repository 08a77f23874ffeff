#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CZeroMQ

/// A failed libzmq call: which C function failed, with which `errno`, and libzmq's text for it.
///
/// Every `zmq_*` call in this module goes through one internal helper, so every failure is
/// reported the same way. `EINTR` never surfaces: interrupted calls are retried.
/// Conditions callers routinely act on are told apart by ``kind``; the non-blocking APIs
/// (``Socket/send(_:flags:)``, ``Socket/receiveMultipart(flags:)``) report would-block and
/// unknown-peer as results, not as errors.
public struct ZMQError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is, for callers that handle some of them.
    public enum Kind: Sendable, Equatable {
        /// `ETERM`: the socket's context was closed. Close the socket and stop using it.
        case contextTerminated
        /// `EAGAIN`: the operation would block (non-blocking call, or a send/receive timeout).
        case wouldBlock
        /// `EHOSTUNREACH`: a ROUTER with `ROUTER_MANDATORY` has no peer with that routing id.
        case hostUnreachable
        /// `ENOTSOCK`: the socket was already closed with ``Socket/close()``.
        case socketClosed
        /// Any other error; see ``ZMQError/code`` and ``ZMQError/message``.
        case other
    }

    /// The C function that failed, e.g. `"zmq_bind"`.
    public let call: StaticString
    /// The `errno` value reported by `zmq_errno()`.
    public let code: Int32
    /// What the call was about (an endpoint, an option name), when that helps to act on the error.
    public let detail: String?

    /// Creates an error for `call` failing with `code`.
    public init(call: StaticString, code: Int32, detail: String? = nil) {
        self.call = call
        self.code = code
        self.detail = detail
    }

    /// The kind of failure, derived from ``code``.
    public var kind: Kind {
        switch code {
        case ETERM: .contextTerminated
        case EAGAIN: .wouldBlock
        case EHOSTUNREACH: .hostUnreachable
        case ENOTSOCK: .socketClosed
        default: .other
        }
    }

    /// libzmq's description of ``code`` (`zmq_strerror`).
    public var message: String { String(cString: zmq_strerror(code)) }

    /// `"zmq_bind(tcp://nowhere:1) failed: No such device (errno 19)"`.
    public var description: String {
        let subject = detail.map { "\(call)(\($0))" } ?? "\(call)"
        return "\(subject) failed: \(message) (errno \(code))"
    }
}

extension ZMQError: Equatable {
    /// Two errors are equal when they name the same call, code and detail.
    public static func == (lhs: ZMQError, rhs: ZMQError) -> Bool {
        lhs.code == rhs.code && lhs.detail == rhs.detail
            && lhs.call.description == rhs.call.description
    }
}

/// The one path for every libzmq call that reports failure as `-1` + `zmq_errno()`.
///
/// Runs `body`; on `-1` reads `zmq_errno()`, retries on `EINTR`, and otherwise throws a
/// ``ZMQError`` naming `call`. `EAGAIN` is thrown as `.wouldBlock`; callers that expect it use
/// ``zmqCallUnlessWouldBlock(_:detail:_:)``. Returns the call's non-negative result.
@inline(__always) @discardableResult
func zmqCall(
    _ call: StaticString, detail: @autoclosure () -> String? = nil, _ body: () -> Int32
) throws(ZMQError) -> Int32 {
    while true {
        let rc = body()
        if rc != -1 { return rc }
        let code = zmq_errno()
        if code == EINTR { continue }
        throw ZMQError(call: call, code: code, detail: detail())
    }
}

/// ``zmqCall(_:detail:_:)`` for calls that may legitimately would-block: `EAGAIN` returns `nil`.
@inline(__always)
func zmqCallUnlessWouldBlock(
    _ call: StaticString, detail: @autoclosure () -> String? = nil, _ body: () -> Int32
) throws(ZMQError) -> Int32? {
    do throws(ZMQError) {
        return try zmqCall(call, detail: detail(), body)
    } catch where error.code == EAGAIN {
        return nil
    }
}

/// ``zmqCall(_:detail:_:)`` for calls that return a pointer and report failure as `NULL`.
@inline(__always)
func zmqCall(
    _ call: StaticString, detail: @autoclosure () -> String? = nil,
    _ body: () -> UnsafeMutableRawPointer?
) throws(ZMQError) -> UnsafeMutableRawPointer {
    var pointer: UnsafeMutableRawPointer?
    try zmqCall(call, detail: detail()) {
        pointer = body()
        return pointer == nil ? -1 : 0
    }
    return pointer!
}
