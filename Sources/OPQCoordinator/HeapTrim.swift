import Glibc

/// Gives the C heap's free pages back to the system after the coordinator accepted many operations.
///
/// Decoding a big Submit allocates its protobuf messages (≈ 250 bytes per operation) between what the
/// coordinator keeps; once they are freed, glibc keeps those pages resident (it returns only the top of
/// the heap by itself), so a 200,000-operation submission left ≈ 85 MB more resident than the state it
/// built. `malloc_trim(0)` hands back every free page; it walks the heap (milliseconds for hundreds of
/// megabytes), so it runs only once at least ``threshold`` operations arrived since the last trim, at the
/// first turn that accepts none (by then the turn that took them has freed what it decoded).
/// 200,000 operations from a job file: 881 → 455 bytes resident per operation.
struct HeapTrim {
    /// Operations accepted since the last trim that make the next turn end with a trim.
    static let threshold = 20_000

    /// ``Scheduler/operationTotal`` at the last trim.
    private var trimmedAt = 0
    /// ``Scheduler/operationTotal`` after the previous turn.
    private var lastTotal = 0

    /// glibc's `malloc_trim` (not in the Glibc module's headers); nil with another C library.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    /// After a turn: trims at the first turn that accepted nothing after ``threshold`` operations arrived
    /// since the last trim (by then the turn that took them has freed what it decoded).
    mutating func afterTurn(operationTotal: Int) {
        defer { lastTotal = operationTotal }
        guard operationTotal == lastTotal, operationTotal - trimmedAt >= Self.threshold else { return }
        trimmedAt = operationTotal
        _ = Self.mallocTrim?(0)
    }
}
