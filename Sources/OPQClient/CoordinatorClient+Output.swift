import OPQCore
import OPQWire

extension CoordinatorClient {
    /// Copies `stream` of operation `id` from `offset` to `write`, one slice (1 MiB) at a time, up to what
    /// the coordinator holds now (all of it once the attempt finished). Memory: one slice.
    public func copyOutput(_ id: OperationID, _ stream: StandardStream, from offset: UInt64 = 0,
                           to write: ([UInt8]) -> Void) throws(ClientError) -> OutputCopy {
        try connection.copyOutput(id, stream.wire, from: offset, to: write)
    }
}
