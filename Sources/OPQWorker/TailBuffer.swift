/// The last `capacity` bytes of a stream: a ring buffer that overwrites its oldest bytes.
///
/// Used for captured stdout/stderr, so a chatty process costs a bounded amount of memory however much
/// it prints. Not thread-safe: each buffer is owned by one drain queue.
public struct TailBuffer: Sendable, Hashable {
    /// The default capacity of captured output: 64 KiB per stream.
    public static let defaultCapacity = 64 * 1024

    /// How many bytes it keeps at most.
    public let capacity: Int
    /// Every byte appended so far, kept or not.
    public private(set) var totalCount: Int = 0
    private var storage: [UInt8] = []
    /// Index in `storage` of the oldest byte once the buffer has wrapped.
    private var head = 0

    /// Creates an empty buffer keeping at most `capacity` bytes.
    public init(capacity: Int = TailBuffer.defaultCapacity) {
        precondition(capacity > 0, "TailBuffer capacity must be positive, got \(capacity)")
        self.capacity = capacity
    }

    /// Bytes dropped from the front because the stream was longer than `capacity`.
    public var droppedCount: Int { totalCount - storage.count }

    /// Appends bytes, dropping the oldest ones beyond `capacity`.
    ///
    /// - Complexity: O(`bytes.count`), at most O(`capacity`) copied.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        totalCount += bytes.count
        var slice = bytes[...]
        if slice.count >= capacity {
            // Only the last `capacity` bytes can survive: replace everything.
            storage = Array(slice.suffix(capacity))
            head = 0
            return
        }
        // Fill up to capacity first.
        let free = capacity - storage.count
        if free > 0 {
            let taken = min(free, slice.count)
            storage.append(contentsOf: slice.prefix(taken))
            slice = slice.dropFirst(taken)
        }
        // Then overwrite the oldest bytes, wrapping around.
        while !slice.isEmpty {
            let run = min(capacity - head, slice.count)
            storage.replaceSubrange(head ..< head + run, with: slice.prefix(run))
            slice = slice.dropFirst(run)
            head = (head + run) % capacity
        }
    }

    /// Appends bytes, dropping the oldest ones beyond `capacity`.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The kept bytes, oldest first.
    public var bytes: [UInt8] {
        guard head > 0 else { return storage }
        return Array(storage[head...] + storage[..<head])
    }
}
