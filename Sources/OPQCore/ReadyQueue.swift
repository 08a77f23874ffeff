import DequeModule
import HeapModule

/// The ready entries of one queue and placement class, smallest key first.
///
/// Keys are (priority rank, submission sequence), and operations mostly become ready in submission
/// order, so most insertions are larger than every key already held: those go to a FIFO in O(1). Only
/// out-of-order ones (an early operation whose dependencies finished late, a requeued attempt) go to a
/// heap. The minimum is the smaller of the two fronts.
/// - Complexity: insert O(1) in order, O(log n) otherwise; `min` O(1); `removeMin` O(1) from the FIFO,
///   O(log n) from the heap.
struct ReadyQueue {
    private var fifo = Deque<ReadyEntry>()
    private var heap = Heap<ReadyEntry>()

    init() {}

    /// A queue holding `entries`.
    init(_ entries: [ReadyEntry]) {
        for entry in entries.sorted() { fifo.append(entry) }
    }

    var count: Int { fifo.count + heap.count }

    /// Every entry, in no particular order.
    var unordered: [ReadyEntry] { Array(fifo) + heap.unordered }

    mutating func insert(_ entry: ReadyEntry) {
        if let last = fifo.last, entry < last {
            heap.insert(entry)
        } else {
            fifo.append(entry)
        }
    }

    /// The smallest entry.
    var min: ReadyEntry? {
        switch (fifo.first, heap.min) {
        case let (a?, b?): b < a ? b : a
        case let (a?, nil): a
        case let (nil, b): b
        }
    }

    /// Removes and returns the smallest entry; the queue must not be empty.
    mutating func removeMin() -> ReadyEntry {
        if let a = fifo.first, let b = heap.min, b < a { return heap.removeMin() }
        if fifo.isEmpty { return heap.removeMin() }
        return fifo.removeFirst()
    }
}
