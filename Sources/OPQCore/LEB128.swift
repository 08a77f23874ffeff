/// LEB128 varints, as protobuf and the journal write them: 7 bits a byte, lowest first, the high bit set
/// on every byte but the last; signed values zigzag-mapped first (0, -1, 1, -2 … → 0, 1, 2, 3 …).
public enum LEB128 {
    /// Appends `value` to `bytes` (1 byte below 128, at most 10).
    @inlinable
    public static func append<Bytes: RangeReplaceableCollection>(_ value: UInt64, to bytes: inout Bytes) where Bytes.Element == UInt8 {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// `value` zigzag-mapped, so that small negative numbers stay short.
    @inlinable
    public static func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }

    /// The signed value of a zigzag-mapped `raw`.
    @inlinable
    public static func unzigzag(_ raw: UInt64) -> Int64 { Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1) }
}
