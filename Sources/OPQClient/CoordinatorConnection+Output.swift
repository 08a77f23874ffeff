import OPQCore
import OPQWire

/// Where a copy of an operation's output got to (``CoordinatorConnection/copyOutput(_:_:from:to:)``).
public struct OutputCopy: Sendable, Equatable {
    /// The offset after the last byte copied.
    public var offset: UInt64
    /// Bytes the coordinator kept of the stream.
    public var spooled: UInt64
    /// Bytes the stream produced as far as the coordinator knows (more than ``spooled`` = cut).
    public var total: UInt64
    /// The attempt finished: nothing more will come.
    public var complete: Bool
    /// Nothing is spooled for the operation (no output, or dropped: only its tail is left, see
    /// ``CoordinatorConnection/operation(_:includeOutput:)``).
    public var expired: Bool

    /// True when bytes the stream produced were not kept.
    public var isCut: Bool { total > spooled }
}

@_spi(Wire)
extension CoordinatorConnection {
    /// One slice of an operation's spooled output: up to `maxBytes` (0 = 1 MiB) of `stream` from `offset`.
    public func readOutput(_ id: OperationID, _ stream: Opq_V1_OutputStream, offset: UInt64,
                           maxBytes: UInt32 = 0) throws(ClientError) -> (slice: Opq_V1_OutputSlice, bytes: [UInt8]) {
        let (reply, raw) = try request {
            $0.readOutput.operation = id.rawValue
            $0.readOutput.stream = stream
            $0.readOutput.offset = offset
            $0.readOutput.maxBytes = maxBytes
        }
        return (reply.output, reply.output.bytes(in: raw))
    }

    /// Copies `stream` of operation `id` from `offset` to `write`, one slice (1 MiB) at a time, up to what
    /// the coordinator holds now (all of it once the attempt finished). Memory: one slice.
    public func copyOutput(_ id: OperationID, _ stream: Opq_V1_OutputStream, from offset: UInt64 = 0,
                           to write: ([UInt8]) -> Void) throws(ClientError) -> OutputCopy {
        var offset = offset
        while true {
            let (slice, bytes) = try readOutput(id, stream, offset: offset)
            if !bytes.isEmpty { write(bytes) }
            offset += UInt64(bytes.count)
            if bytes.isEmpty || offset >= slice.spooledBytes {
                return OutputCopy(offset: offset, spooled: slice.spooledBytes, total: slice.totalBytes,
                                  complete: slice.complete, expired: slice.expired)
            }
        }
    }
}
