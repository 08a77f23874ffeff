@testable import OPQCore

/// A deliberately plain reference model of resource-aware dispatch (README "Resources", R1–R4): lists
/// scanned in full at every step, no heaps, no placement classes. The core must make exactly the
/// dispatches this model makes.
struct ResourceModel {
    struct Worker {
        let name: String
        let slots: Int
        let cpus: Int
        /// nil: announced none (not checked).
        let memory: Int?
        let queues: Set<String>?
        var running: [String] = []
        var usedCpus = 0
        var usedMemory = 0

        var freeSlots: Int { max(0, slots - running.count) }
        var freeCpus: Int { cpus - usedCpus }
        var freeMemory: Int { memory.map { $0 - usedMemory } ?? Int.max }

        func serves(_ queue: String) -> Bool { queues?.contains(queue) ?? true }
        func hasRoom(_ needs: Resources) -> Bool { freeSlots > 0 && freeCpus >= needs.cpus && freeMemory >= needs.memory }
        func canHold(_ needs: Resources) -> Bool { slots > 0 && cpus >= needs.cpus && (memory ?? Int.max) >= needs.memory }
    }

    struct Operation {
        let name: String
        let queue: String
        let priority: QueuePriority
        let sequence: Int
        let needs: Resources
    }

    /// Live workers in join order.
    var workers: [Worker] = []
    /// Ready operations (not dispatched), in no order.
    var ready: [Operation] = []
    /// Dispatched operations by name, with the worker holding them.
    var running: [String: (operation: Operation, worker: String)] = [:]
    var nextSequence = 0

    /// Ready operations in dispatch order: priority, then submission order.
    var inLine: [Operation] {
        ready.sorted { ($0.priority.rawValue, -$0.sequence) > ($1.priority.rawValue, -$1.sequence) }
    }

    mutating func submit(_ specs: [OperationSpec]) -> [(String, String)] {
        for spec in specs {
            ready.append(Operation(name: spec.name, queue: spec.queue, priority: spec.priority, sequence: nextSequence, needs: spec.resources))
            nextSequence += 1
        }
        return pump()
    }

    mutating func join(_ worker: Worker) -> [(String, String)] {
        workers.append(worker)
        return pump()
    }

    /// The worker leaves: what it runs goes back in line, keeping its place.
    mutating func leave(_ name: String) -> [(String, String)] {
        let worker = workers.first { $0.name == name }!
        workers.removeAll { $0.name == name }
        for op in worker.running { ready.append(running.removeValue(forKey: op)!.operation) }
        return pump()
    }

    mutating func finish(_ name: String) -> [(String, String)] {
        let (op, worker) = running.removeValue(forKey: name)!
        let w = workers.firstIndex { $0.name == worker }!
        workers[w].running.removeAll { $0 == name }
        workers[w].usedCpus -= op.needs.cpus
        workers[w].usedMemory -= op.needs.memory
        return pump()
    }

    mutating func cancel(_ name: String) -> [(String, String)] {
        ready.removeAll { $0.name == name }
        return pump()
    }

    /// One dispatch decision: the first operation of each (queue, demand) class in line is placed on the
    /// unreserved worker with room and the most free slots, or reserves the unreserved worker that could
    /// hold it with the most free CPUs, then memory (ties: the earliest joined). Also returns the head's
    /// reservation: (operation, worker) for the first in line that fits nowhere now.
    func decide() -> (dispatch: (op: Int, worker: Int)?, headReservation: (String, Int)?) {
        var reserved: [Int] = []
        var seen: [(String, Resources)] = []
        var head: (String, Int)?
        let line = inLine
        for op in line {
            guard !seen.contains(where: { $0.0 == op.queue && $0.1 == op.needs }) else { continue }
            seen.append((op.queue, op.needs))
            var best = -1
            var closest = -1
            for (w, worker) in workers.enumerated() where worker.serves(op.queue) && !reserved.contains(w) {
                if worker.hasRoom(op.needs) {
                    if best < 0 || worker.freeSlots > workers[best].freeSlots { best = w }
                } else if worker.canHold(op.needs), closest < 0
                            || (worker.freeCpus, worker.freeMemory) > (workers[closest].freeCpus, workers[closest].freeMemory) {
                    closest = w
                }
            }
            if best >= 0 { return (( ready.firstIndex { $0.name == op.name }!, best), head) }
            if closest >= 0 {
                if reserved.isEmpty { head = (op.name, closest) }
                reserved.append(closest)
            }
        }
        return (nil, head)
    }

    /// Dispatches until nothing more goes; returns (operation, worker) per dispatch, in order.
    mutating func pump() -> [(String, String)] {
        var dispatched: [(String, String)] = []
        while let (k, w) = decide().dispatch {
            let op = ready.remove(at: k)
            workers[w].running.append(op.name)
            workers[w].usedCpus += op.needs.cpus
            workers[w].usedMemory += op.needs.memory
            running[op.name] = (op, workers[w].name)
            dispatched.append((op.name, workers[w].name))
        }
        return dispatched
    }

    /// True when some live worker serving its queue could ever hold `op`.
    func canEverRun(_ op: Operation) -> Bool {
        workers.contains { $0.serves(op.queue) && $0.canHold(op.needs) }
    }
}
