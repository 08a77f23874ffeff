import DequeModule
import OPQCore

/// What the last finish report of an operation said beyond its outcome: exit status, duration, and the
/// captured output tails — kept in memory within a byte budget, oldest reports dropped first.
struct OutputStore {
    struct Record {
        var exitCode: Int32?
        var signal: Int32?
        var duration: Double
        var stdout: [UInt8]
        var stdoutTotal: UInt64
        var stderr: [UInt8]
        var stderrTotal: UInt64
        var errorMessage: String
    }

    private var records: [OperationID: Record] = [:]
    private var order = Deque<OperationID>()
    private var bytes = 0
    let budget: Int

    init(budget: Int) { self.budget = budget }

    subscript(id: OperationID) -> Record? { records[id] }

    /// Keeps `record` as the last report of `id`, dropping the oldest records beyond the budget. A report
    /// with nothing to keep (a handler's: no output, no exit status) is not stored unless it replaces one.
    mutating func record(_ record: Record, for id: OperationID) {
        let isBare = record.exitCode == nil && record.signal == nil && record.stdout.isEmpty && record.stderr.isEmpty
            && record.errorMessage.isEmpty
        if isBare && records[id] == nil { return }
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
}
