/// Ranges of the resources an operation asks for and a worker offers (README "Resources").
extension Limits {
    /// Most CPUs one operation may ask for or one worker may offer: as many as slots.
    public static let maxCpus = maxSlots
    /// Most bytes of memory one operation may ask for or one worker may offer: 1 PiB.
    public static let maxMemory = 1 << 50

    /// Why the memory size `text`, given as `name` (a flag, a field, a `file:line`), is refused, or nil
    /// when it is a size from 0 to ``maxMemory`` (read by ``ByteSize/bytes(parsing:)``).
    public static func memoryProblem(_ text: String, name: String) -> String? {
        guard let bytes = ByteSize.bytes(parsing: text) else {
            return "\(name) must be a size in bytes or with a unit (e.g. 512M, 2G, 1.5T; K, M, G, T, P are powers of 1024), not '\(text)'"
        }
        guard bytes <= maxMemory else {
            return "\(name) must be at most \(ByteSize.format(maxMemory)) (\(maxMemory) bytes), not '\(text)'"
        }
        return nil
    }
}
