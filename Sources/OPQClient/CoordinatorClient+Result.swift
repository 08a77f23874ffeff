import OPQCore
import OPQWire

extension CoordinatorClient {
    /// The handler's result of operation `id` (README "Handler results"): empty when it has none.
    /// - Throws: ``ClientError`` (an unknown operation is refused).
    public func result(of id: OperationID) throws(ClientError) -> [UInt8] {
        let (reply, raw) = try connection.request {
            $0.getOperation.operation = id.rawValue
            $0.getOperation.includeResult = true
        }
        return reply.operation.result.bytes(in: raw)
    }
}
