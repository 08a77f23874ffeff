/// A Swift type that a ``SocketOption`` value can have, with its C representation.
///
/// Conformers: `Bool` and `Int32` (C `int`), `Int64` (C `int64_t`), `[UInt8]` (binary) and
/// `String` (text, e.g. Z85 keys and endpoints).
public protocol SocketOptionValue {
    /// Calls `body` with the bytes `zmq_setsockopt` expects for this value.
    func withOptionBytes<R>(
        _ body: (UnsafeRawBufferPointer) throws(ZMQError) -> R
    ) throws(ZMQError) -> R

    /// Makes a value from what `read(buffer, &size)` (`zmq_getsockopt`) stores in a buffer of
    /// `capacity` bytes (used by variable-length types) and its resulting size.
    static func readOption(
        capacity: Int,
        _ read: (UnsafeMutableRawPointer, inout Int) throws(ZMQError) -> Void
    ) throws(ZMQError) -> Self
}

/// Fixed-size C integers are read and written in place.
extension SocketOptionValue where Self: FixedWidthInteger {
    /// The integer's own bytes.
    public func withOptionBytes<R>(
        _ body: (UnsafeRawBufferPointer) throws(ZMQError) -> R
    ) throws(ZMQError) -> R {
        var value = self
        return try Swift.withUnsafeBytes(of: &value) { bytes throws(ZMQError) in try body(bytes) }
    }

    /// Reads `MemoryLayout<Self>.size` bytes; `capacity` is ignored.
    public static func readOption(
        capacity: Int,
        _ read: (UnsafeMutableRawPointer, inout Int) throws(ZMQError) -> Void
    ) throws(ZMQError) -> Self {
        var value = Self.zero
        var size = MemoryLayout<Self>.size
        try Swift.withUnsafeMutableBytes(of: &value) { bytes throws(ZMQError) in
            try read(bytes.baseAddress!, &size)
        }
        return value
    }
}

/// A C `int`.
extension Int32: SocketOptionValue {}
/// A C `int64_t`.
extension Int64: SocketOptionValue {}

extension Bool: SocketOptionValue {
    /// A C `int`, `1` or `0`.
    public func withOptionBytes<R>(
        _ body: (UnsafeRawBufferPointer) throws(ZMQError) -> R
    ) throws(ZMQError) -> R {
        try (self ? 1 as Int32 : 0).withOptionBytes(body)
    }

    /// Non-zero C `int` is `true`.
    public static func readOption(
        capacity: Int,
        _ read: (UnsafeMutableRawPointer, inout Int) throws(ZMQError) -> Void
    ) throws(ZMQError) -> Bool {
        try Int32.readOption(capacity: capacity, read) != 0
    }
}

extension Array: SocketOptionValue where Element == UInt8 {
    /// The bytes themselves.
    public func withOptionBytes<R>(
        _ body: (UnsafeRawBufferPointer) throws(ZMQError) -> R
    ) throws(ZMQError) -> R {
        // `Array.withUnsafeBytes` is `rethrows` (untyped), so carry the typed error out by hand.
        let result = withUnsafeBytes { bytes in
            Result { () throws(ZMQError) in try body(bytes) }
        }
        return try result.get()
    }

    /// Up to `capacity` bytes.
    public static func readOption(
        capacity: Int,
        _ read: (UnsafeMutableRawPointer, inout Int) throws(ZMQError) -> Void
    ) throws(ZMQError) -> [UInt8] {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        var size = capacity
        try read(buffer, &size)
        return [UInt8](UnsafeRawBufferPointer(start: buffer, count: Swift.min(size, capacity)))
    }
}

extension String: SocketOptionValue {
    /// The UTF-8 bytes, without a terminating NUL.
    public func withOptionBytes<R>(
        _ body: (UnsafeRawBufferPointer) throws(ZMQError) -> R
    ) throws(ZMQError) -> R {
        try Array(utf8).withOptionBytes(body)
    }

    /// Text read into `capacity` bytes, up to the first NUL.
    public static func readOption(
        capacity: Int,
        _ read: (UnsafeMutableRawPointer, inout Int) throws(ZMQError) -> Void
    ) throws(ZMQError) -> String {
        let bytes = try [UInt8].readOption(capacity: capacity, read)
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
}
