/// The finished, not yet pruned jobs in the order they finished, so that `opq prune` walks only what it
/// removes: the oldest come first, and a prune stops at the first job it keeps.
///
/// A job enters when its last operation finishes (also while the journal is replayed, which finishes
/// them in their original order) and leaves when it is pruned. A job pruned out of order (by
/// ``Scheduler/prune(job:)``) leaves a stale entry behind; stale entries are dropped when they reach the
/// front, and the storage is compacted once they are more than half of it, so each costs O(1) amortized.
struct FinishedJobs: Sendable {
    /// Job indices in finish order; those before `head` are gone.
    private var storage: [Int] = []
    /// Index of the oldest entry in `storage`.
    private var head = 0
    /// Entries of jobs already pruned (skipped when met).
    private(set) var stale = 0

    /// Entries, stale ones included.
    var count: Int { storage.count - head }
    /// Entries oldest first, stale ones included.
    var entries: ArraySlice<Int> { storage[head...] }
    /// The oldest entry, if any.
    var first: Int? { head < storage.count ? storage[head] : nil }

    /// Adds job `index`, which just finished.
    /// - Complexity: O(1) amortized.
    mutating func append(_ index: Int) { storage.append(index) }

    /// Drops the oldest entry; `wasStale` says whether its job was pruned already.
    /// - Complexity: O(1) amortized.
    mutating func removeFirst(wasStale: Bool) {
        head += 1
        if wasStale { stale -= 1 }
        if head > 32 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    /// Records that a job with an entry other than the first was pruned; compacts when stale entries
    /// are more than half of what is kept, keeping those for which `isLive` holds.
    /// - Complexity: O(1) amortized.
    mutating func markStale(isLive: (Int) -> Bool) {
        stale += 1
        guard stale > 32, stale * 2 > count else { return }
        storage = storage[head...].filter(isLive)
        head = 0
        stale = 0
    }
}
