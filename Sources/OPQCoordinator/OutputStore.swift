import DequeModule
import OPQCore
import OPQJournal

/// What the last finish report of an operation said beyond its outcome: exit status, duration, and the
/// captured output tails — kept in memory within a byte budget, oldest reports dropped first.
struct OutputStore {
    typealias Record = OperationOutput

    private var records: [OperationID: Record] = [:]
    private var order = Deque<OperationID>()
    private var bytes = 0
    let budget: Int

    init(budget: Int) { self.budget = budget }

    subscript(id: OperationID) -> Record? { records[id] }

    /// Keeps `record` as the last report of `id`, dropping the oldest records beyond the budget. A report
    /// with nothing to keep (a handler's: no output, no exit status) is not stored unless it replaces one.
    mutating func record(_ record: Record, for id: OperationID) {
        if record.isBare && records[id] == nil { return }
        if let old = records[id] {
            bytes -= old.stdout.count + old.stderr.count
        } else {
            order.append(id)
        }
        records[id] = record
        bytes += record.stdout.count + record.stderr.count
        while bytes > budget, let oldest = order.first, oldest != id {
            order.removeFirst()
            if let dropped = records.removeValue(forKey: oldest) { bytes -= dropped.stdout.count + dropped.stderr.count }
        }
    }

    /// Forgets the record of `id` (a pruned operation); its place in the drop order is skipped later.
    mutating func remove(_ id: OperationID) {
        if let dropped = records.removeValue(forKey: id) { bytes -= dropped.stdout.count + dropped.stderr.count }
    }
}
