/// Validation and helpers of streamed output (`OutputChunk`, `OutputPush`, `ReadOutput`, `OutputSlice`).

extension Opq_V1_OutputStream: KnownEnum {
    var isKnown: Bool { if case .UNRECOGNIZED = self { false } else { true } }
}

/// A piece of a command's output whose bytes travel in a raw frame: a worker's `OutputChunk`, the
/// coordinator's `OutputPush`. One validation and one way to the bytes for both.
public protocol RawOutputPiece {
    var operation: UInt64 { get }
    var attempt: UInt32 { get }
    var stream: Opq_V1_OutputStream { get }
    /// 1-based index of the raw frame holding the bytes.
    var frame: UInt32 { get }
}

extension RawOutputPiece {
    func validate(_ path: @autoclosure () -> String, rawFrames: Int) throws(WireError) {
        try Check.id(operation, path() + ".operation")
        try Check.attempt(attempt, path() + ".attempt")
        try Check.known(stream, path() + ".stream", allowZero: false)
        try Check.that(frame >= 1, path() + ".frame", "must refer to a raw frame (≥ 1)")
        try Check.frame(frame, rawFrames: rawFrames, path() + ".frame")
    }

    /// The piece's bytes (validated: the frame exists).
    public func bytes(in raw: [[UInt8]]) -> [UInt8] {
        frame >= 1 && Int(frame) <= raw.count ? raw[Int(frame) - 1] : []
    }
}

extension Opq_V1_OutputChunk: RawOutputPiece {}

extension Opq_V1_OutputPush: RawOutputPiece {}

extension Opq_V1_ReadOutput {
    /// The largest slice a client may ask for.
    public static let maxSliceBytes: UInt32 = 16 << 20
    /// The slice size when the client leaves it to the coordinator.
    public static let defaultSliceBytes: UInt32 = 1 << 20

    func validate(_ path: @autoclosure () -> String) throws(WireError) {
        try Check.id(operation, path() + ".operation")
        try Check.known(stream, path() + ".stream", allowZero: false)
        try Check.that(maxBytes <= Self.maxSliceBytes, path() + ".max_bytes",
                       "must be at most \(Self.maxSliceBytes), not \(maxBytes)")
    }
}

extension Opq_V1_OutputSlice {
    func validate(_ path: @autoclosure () -> String, rawFrames: Int) throws(WireError) {
        try Check.frame(frame, rawFrames: rawFrames, path() + ".frame")
    }

    /// The slice's bytes.
    public func bytes(in raw: [[UInt8]]) -> [UInt8] {
        frame >= 1 && Int(frame) <= raw.count ? raw[Int(frame) - 1] : []
    }

    /// True when bytes the stream produced are not in the spool (over the coordinator's cap).
    public var isCut: Bool { totalBytes > spooledBytes }
}
