import OPQCore
import OPQWire

/// A piece of a running operation's output pushed by the coordinator to a watch that asked for it
/// (``CoordinatorClient/watch(_:includeOutput:)``, ``WatchUpdate/output(_:)``).
///
/// Pieces of one stream come in offset order. A piece may start past where the last one ended — the
/// client could not take the bytes in time, or they were written before the watch started: the
/// coordinator then sends an empty piece whose offset is where the stream has reached. Read the gap
/// with ``CoordinatorClient/copyOutput(_:_:from:to:)``. A piece sent again after a worker reconnected
/// repeats bytes (the same offsets).
public struct OutputPiece: Sendable, Hashable {
    public var operation: OperationID
    /// The attempt that wrote it.
    public var attempt: Int
    public var stream: StandardStream
    /// Offset of the first byte in the stream.
    public var offset: UInt64
    public var bytes: [UInt8]

    public init(operation: OperationID, attempt: Int, stream: StandardStream, offset: UInt64, bytes: [UInt8]) {
        self.operation = operation
        self.attempt = attempt
        self.stream = stream
        self.offset = offset
        self.bytes = bytes
    }
}

extension CoordinatorClient {
    /// Copies `stream` of operation `id` from `offset` to `write`, one slice (1 MiB) at a time, up to what
    /// the coordinator holds now (all of it once the attempt finished). Memory: one slice.
    public func copyOutput(_ id: OperationID, _ stream: StandardStream, from offset: UInt64 = 0,
                           to write: ([UInt8]) -> Void) throws(ClientError) -> OutputCopy {
        try connection.copyOutput(id, stream.wire, from: offset, to: write)
    }
}
