#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a ``ZMTPDealer`` connection failed: what the peer did (or the system call that failed), with the
/// endpoint, so a user can tell a coordinator that wants CURVE from something that is not ZeroMQ at all.
public struct ZMTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Problem: Equatable, Sendable {
        /// The peer's first bytes are not a ZMTP greeting's signature (not a ZeroMQ socket).
        case notZMTP
        /// The peer speaks ZMTP `major`.`minor`, older than 3.0 (libzmq before 4.0).
        case version(major: UInt8, minor: UInt8)
        /// The peer's greeting names `mechanism` (CURVE, PLAIN…), not NULL: it wants keys.
        case mechanism(String)
        /// The peer sent a ZMTP signature and closed the connection once it read this client's greeting:
        /// what libzmq does when its socket wants another mechanism (CURVE) than the client's NULL.
        case nullRefused
        /// The peer's READY says it is a `socketType` socket, which a DEALER cannot talk to.
        case socketType(String)
        /// The peer sent an ERROR command with `reason`.
        case refused(reason: String)
        /// A frame announced `bytes` bytes, more than `limit`.
        case frameTooLarge(bytes: UInt64, limit: Int)
        /// A message had more than `limit` frames, or more than `limit` bytes in all.
        case messageTooLarge(limit: Int)
        /// The peer broke the protocol (`detail` says how).
        case malformed(String)
        /// The peer closed the connection; `during` names the step (greeting, handshake, a frame, idle).
        case closed(during: String)
        /// A system call failed with `errno` `code`.
        case system(call: String, code: Int32)
    }

    /// The endpoint connected to.
    public let endpoint: String
    /// What went wrong.
    public let problem: Problem

    /// An error about `endpoint`.
    public init(endpoint: String, _ problem: Problem) {
        self.endpoint = endpoint
        self.problem = problem
    }

    public var description: String {
        switch problem {
        case .notZMTP:
            "\(endpoint) does not speak ZeroMQ (its first bytes are not a ZMTP greeting): is it an opq coordinator's client endpoint?"
        case let .version(major, minor):
            "\(endpoint) speaks ZMTP \(major).\(minor) (libzmq before 4.0); opq needs ZMTP 3"
        case .mechanism(let name):
            "the coordinator at \(endpoint) requires the \(name) security mechanism: give its public key with --server-key or "
                + "\(CurveKeys.serverKeyVariable) (and this client's secret key with --curve-key)"
        case .nullRefused:
            "the coordinator at \(endpoint) closed the connection when it read this client's greeting (no security "
                + "mechanism): it probably requires CURVE. Give its public key with --server-key or \(CurveKeys.serverKeyVariable) "
                + "(and this client's secret key with --curve-key)"
        case .socketType(let type):
            "\(endpoint) is a ZeroMQ \(type) socket, not a coordinator's client endpoint (a ROUTER)"
        case .refused(let reason):
            "the coordinator at \(endpoint) refused the connection (ZMTP ERROR: \(reason.isEmpty ? "no reason given" : reason))"
        case let .frameTooLarge(bytes, limit):
            "\(endpoint) sent a frame of \(bytes) bytes, more than the \(limit) bytes opq accepts; connection closed"
        case .messageTooLarge(let limit):
            "\(endpoint) sent a message over \(limit) (frames or bytes), more than opq accepts; connection closed"
        case .malformed(let detail):
            "\(endpoint) broke the ZMTP protocol (\(detail)); connection closed"
        case .closed(let during):
            "the coordinator at \(endpoint) closed the connection \(during)"
        case let .system(call, code):
            "\(call) on the connection to \(endpoint) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}
