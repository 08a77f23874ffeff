import OPQCore

/// Handlers' results by operation (README "Handler results"): kept in memory until the operation's job
/// is pruned (never evicted with output tails), journaled with the finish report that carried them and
/// restored from the journal on start.
struct ResultStore {
    private var results: [OperationID: [UInt8]] = [:]
    /// Bytes held in all.
    private(set) var bytes = 0

    /// No operation has a result.
    var isEmpty: Bool { results.isEmpty }

    /// The result of `id`, or nil when it has none.
    subscript(id: OperationID) -> [UInt8]? { results[id] }

    /// Keeps `result` as the result of `id` (replacing an earlier one); an empty result keeps nothing
    /// (only a success carries one, and it is the last report). A result over `Limits.maxResultBytes`
    /// is not kept (a worker never sends one: it fails the attempt instead).
    mutating func record(_ result: [UInt8], for id: OperationID) {
        guard !result.isEmpty, result.count <= Limits.maxResultBytes else { return }
        remove(id)
        results[id] = result
        bytes += result.count
    }

    /// Forgets the result of `id` (a pruned operation).
    mutating func remove(_ id: OperationID) {
        if let dropped = results.removeValue(forKey: id) { bytes -= dropped.count }
    }
}
