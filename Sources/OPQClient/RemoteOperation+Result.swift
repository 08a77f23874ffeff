import Foundation
import OPQCore
import OPQWire

extension RemoteOperation {
    /// Its handler's result, as the coordinator keeps it (NSInvocationOperation's `result`): the bytes
    /// the handler returned, apart from stdout and stderr; empty when it returned none, has not finished,
    /// or is not a handler. At most 1 MiB (README "Handler results"). Kept after a coordinator restart.
    /// For an operation made of execution blocks: a JSON array of the blocks' results in order
    /// (``blockResults`` decodes it; README "Execution blocks").
    /// - Throws: ``ClientError/notSubmitted(operation:)`` before it was added; a transport error.
    public var result: Data {
        get throws(ClientError) {
            guard let placed = condition.withLock({ placement }) else { throw .notSubmitted(operation: description) }
            let (reply, raw) = try placed.coordinator.request(timeout: placed.coordinator.requestTimeout) {
                $0.getOperation.operation = placed.id.rawValue
                $0.getOperation.includeResult = true
            }
            return Data(reply.operation.result.bytes(in: raw))
        }
    }

    /// Its result decoded from JSON as `type` (what a handler registered with `encoding:` returns).
    /// - Throws: a ``ClientError`` reading it; the decoder's error when it is not `type` as JSON.
    public func result<T: Decodable>(as type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(type, from: try result)
    }

    /// Its result as UTF-8 text.
    /// - Throws: a ``ClientError`` reading it; ``ResultDecodingError`` when it is not UTF-8.
    public func result(as type: String.Type) throws -> String {
        let bytes = try result
        guard let text = String(data: bytes, encoding: .utf8) else {
            throw ResultDecodingError(description: "the result of \(description) is \(bytes.count) bytes that are not UTF-8 text; read it as Data")
        }
        return text
    }
}

/// A result that is not of the type asked for.
public struct ResultDecodingError: Error, CustomStringConvertible, Sendable {
    /// What it is, and what to do.
    public var description: String
}
