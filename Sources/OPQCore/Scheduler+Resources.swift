/// Resources: CPUs and memory per operation, capacity per worker, and the reservation that keeps a large
/// operation from being starved by smaller ones (README "Resources", rules R1–R4 there).
///
/// A placement class is a label set *and* a demand (``PlacementKey``), so every operation of one ready
/// heap needs the same: the top of a heap speaks for all of it, and the dispatch loop looks at one entry
/// per heap, as before.
///
/// The rule (R3, anti-starvation): the dispatch loop walks the heads of the ready heaps in dispatch order
/// (priority, then submission order). A head that fits a worker now is dispatched (to the one with the
/// most free slots). A head that fits no worker now, but would fit an eligible one once what that worker
/// runs has finished, *reserves* it: the eligible worker with the most free CPUs (then memory; ties: the
/// earliest joined) that is not reserved yet. Heads later in line skip reserved workers. Reservations are
/// not stored: they are derived again at every dispatch step, from the same order, so they follow
/// priority changes, cancels and workers coming and going with nothing to undo. A reserved worker's free
/// CPUs and memory only grow until its operation fits (nothing behind it in line may go there), and the
/// reservation moves only to a worker with strictly more free, so the first operation in line starts at
/// the latest when the operations that were running on its worker have finished. This is Slurm's
/// reservation for its top job without backfill: opq knows no run times, so it cannot tell which small
/// operation would end before the large one could start, and lets none in.
struct PlacementKey: Hashable {
    /// Labels a worker must carry.
    let labels: [String: String]
    /// What an operation needs of one worker.
    let needs: Resources
}

extension Scheduler {
    /// Adds (`times` 1) or removes (`times` -1) the demand of operation `index` to what `worker` uses.
    mutating func charge(_ worker: Int, for index: Int, times: Int) {
        let needs = placementNeeds[Int(operations[index].placement)]
        workers[worker].usedCpus += times * needs.cpus
        workers[worker].usedMemory &+= times &* needs.memory
    }

    /// CPUs of `worker` not taken by what it holds (negative after its capacity was lowered).
    func freeCpus(_ worker: Int) -> Int { workers[worker].cpus - workers[worker].usedCpus }

    /// Memory of `worker` not taken by what it holds; `Int.max` when it announced none.
    func freeMemory(_ worker: Int) -> Int {
        workers[worker].memory == Int.max ? Int.max : workers[worker].memory &- workers[worker].usedMemory
    }

    /// True when `worker` has a free slot and enough free CPUs and memory for `needs` now.
    func hasRoom(_ worker: Int, for needs: Resources) -> Bool {
        workers[worker].free > 0 && freeCpus(worker) >= needs.cpus && freeMemory(worker) >= needs.memory
    }

    /// True when `worker` takes work (slots > 0) and could hold `needs` once it runs nothing else.
    func canHold(_ worker: Int, _ needs: Resources) -> Bool {
        workers[worker].slots > 0 && workers[worker].cpus >= needs.cpus && workers[worker].memory >= needs.memory
    }

    /// The worker to dispatch the top of ready heap `heap` of `queue` to, or nil; see the rule above.
    /// When the top fits no unreserved worker now, the closest unreserved worker that could hold it is
    /// appended to `reserved`.
    /// - Complexity: O(w · r) for w live workers and r reservations so far in this step (r is small: one
    ///   per head that does not fit).
    func worker(for queue: Int, heap: Int, reserved: inout [Int]) -> Int? {
        let placement = Int(queues[queue].heaps[heap].placement)
        let needs = placementNeeds[placement]
        var best = -1
        var closest = -1
        for worker in liveWorkers where workers[worker].servesQueue[queue] && workers[worker].fitsPlacement[placement] {
            guard reserved.isEmpty || !reserved.contains(worker) else { continue }
            if hasRoom(worker, for: needs) {
                if best < 0 || workers[worker].free > workers[best].free { best = worker }
            } else if canHold(worker, needs), closest < 0
                        || (freeCpus(worker), freeMemory(worker)) > (freeCpus(closest), freeMemory(closest)) {
                closest = worker
            }
        }
        if best < 0, closest >= 0 { reserved.append(closest) }
        return best >= 0 ? best : nil
    }

    /// The resource reason operation `index` waits, given its `eligible` workers (serving its queue with
    /// its labels; not empty), or nil. `isInLine`: it is ready and nothing else holds it back.
    func resourceBlocker(of index: Int, eligible: [Int], isInLine: Bool) -> Blocker? {
        let needs = placementNeeds[Int(operations[index].placement)]
        let taking = eligible.filter { workers[$0].slots > 0 }
        if !taking.isEmpty, !taking.contains(where: { canHold($0, needs) }) {
            let memories = taking.map { workers[$0].memory }.filter { $0 != Int.max }
            return .tooLarge(needs: needs, mostCpus: taking.map { workers[$0].cpus }.max()!,
                             mostMemory: memories.count == taking.count ? memories.max() : nil)
        }
        guard isInLine, !eligible.allSatisfy({ workers[$0].free == 0 }) else { return nil }
        return .resourcesBusy(needs: needs)
    }

    /// For each ready heap of `queue` whose operations no live worker serving it is large enough for: its
    /// first operation in line, how many more wait with it, and why (``QueueSnapshot/tooLarge``).
    /// - Complexity: O(w) per heap with ready operations; O(entries) more for a too-large heap whose top
    ///   entry is stale (the dispatch loop drops stale tops, so that is rare).
    func tooLarge(inQueue queue: Int) -> [String] {
        var lines: [String] = []
        for heap in queues[queue].heaps where heap.live > 0 {
            let eligible = liveWorkers.filter { workers[$0].servesQueue[queue] && workers[$0].fitsPlacement[Int(heap.placement)] }
            guard !eligible.isEmpty, let top = heap.heap.min else { continue }
            let isLive = { (entry: ReadyEntry) in self.operations[Int(entry.index)].heapToken == entry.token }
            guard let first = isLive(top) ? top : heap.heap.unordered.filter(isLive).min(),
                  case let .tooLarge(needs, cpus, memory)? = resourceBlocker(of: Int(first.index), eligible: eligible, isInLine: false) else { continue }
            let more = heap.live > 1 ? " and \(heap.live - 1) more" : ""
            lines.append("\(id(Int(first.index)))\(more): " + Blocker.tooLargeText(needs, mostCpus: cpus, mostMemory: memory))
        }
        return lines
    }

    /// What live worker `index` offers: its CPUs, and its memory (nil when it announced none).
    func capacity(of worker: Int) -> (cpus: Int, memory: Int?) {
        (workers[worker].cpus, workers[worker].memory == Int.max ? nil : workers[worker].memory)
    }
}
