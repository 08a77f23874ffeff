/// Submissions: validation first, then an atomic apply (SEMANTICS §3, §4.4, §6, §9).
extension Scheduler {
    /// Rows of operation indexes stored flat (one allocation for a whole batch, not one per operation).
    struct IndexRows {
        private var values: [Int] = []
        /// `starts[k]..<starts[k + 1]` is row k; empty when every row is empty.
        private var starts: [Int] = []

        /// Appends the next row.
        mutating func append(_ row: [Int], rowIndex: Int) {
            if starts.isEmpty {
                guard !row.isEmpty else { return }
                starts = [Int](repeating: 0, count: rowIndex + 1)
            }
            values.append(contentsOf: row)
            starts.append(values.count)
        }

        /// Row `k` (empty if never appended).
        subscript(k: Int) -> ArraySlice<Int> {
            k + 1 < starts.count ? values[starts[k]..<starts[k + 1]] : []
        }

        var isEmpty: Bool { values.isEmpty }
    }

    /// A validated submission: every reference resolved to a global operation index.
    struct SubmissionPlan {
        /// Index the batch's first operation will get.
        let base: Int
        /// Explicit dependencies per batch operation, deduplicated, as global indexes.
        var explicit = IndexRows()
        /// Barrier dependencies per batch operation, as global indexes.
        var implicit = IndexRows()
        /// Edges from accepted operations (still pending or ready) onto batch operations
        /// (``OperationSpec/dependants``), as global indexes.
        var dependants: [(dependant: Int, target: Int)] = []
        /// Reservations taken up: (batch position, reservation number). Their forward edges are among
        /// `dependants`.
        var takenUp: [(position: Int, number: UInt64)] = []
        /// Forward edges from batch operations onto reservations not taken up by the batch:
        /// (batch position, reservation number).
        var forward: [(position: Int, number: UInt64)] = []
    }

    /// Accepts a submission whole, or refuses it whole.
    ///
    /// On success the operations get contiguous ids in batch order, the submission is journaled, every
    /// operation's initial state is notified, and ready operations are dispatched — all after the whole
    /// batch is in place, so the batch is ordered by priority before any of it runs.
    ///
    /// - Complexity: O(n + e) for n operations and e dependencies, plus, per barrier, the number of
    ///   unfinished operations in its queue. Cycle detection searches only the new part of the graph.
    public mutating func submit(_ submission: Submission, at time: Timestamp) throws(SubmissionError) -> SubmissionReceipt {
        now = time
        let plan = try validate(submission)
        return apply(submission, plan)
    }

    /// Checks a submission without changing anything.
    func validate(_ submission: Submission) throws(SubmissionError) -> SubmissionPlan {
        let specs = submission.operations
        guard !specs.isEmpty else { throw .empty }
        for (queue, settings) in submission.queueSettings {
            if let max = settings.maxConcurrent, max < -1 { throw .invalidMaxConcurrent(queue: queue, value: max) }
        }

        var byName = [String: Int](minimumCapacity: specs.count)
        // Reservations taken up by the batch: number → batch position.
        var takingUp: [UInt64: Int] = [:]
        for (k, spec) in specs.enumerated() {
            try Scheduler.validateFields(spec, index: k)
            if let reservation = spec.reservation {
                guard let number = openReservation(reservation) else {
                    throw .invalidField(index: k, name: spec.name, field: "reservation",
                                        problem: "names \(reservation), which is not an open reservation (taken up or given up already, or never handed out)")
                }
                if let first = takingUp[number] {
                    throw .invalidField(index: k, name: spec.name, field: "reservation",
                                        problem: "names \(reservation), which operation #\(first + 1) of this submission takes up already")
                }
                takingUp[number] = k
            }
            guard !spec.name.isEmpty else { continue }
            if let first = byName[spec.name] { throw .duplicateName(spec.name, index: k, firstIndex: first) }
            byName[spec.name] = k
        }

        let base = operations.count
        var plan = SubmissionPlan(base: base)
        var hasBatchEdges = false
        for (k, spec) in specs.enumerated() {
            var targets: [Int] = []
            var seen: Set<Int>? = spec.dependencies.count > 16 ? Set(minimumCapacity: spec.dependencies.count) : nil
            for reference in spec.dependencies {
                let target: Int
                switch reference {
                case .name(let name):
                    guard let j = byName[name] else {
                        throw .unknownDependency(index: k, name: spec.name, reference: reference,
                                                 suggestion: Scheduler.closest(to: name, among: byName.keys))
                    }
                    target = base + j
                case .id(let id):
                    if let number = openReservation(id) {
                        guard let j = takingUp[id.rawValue - OperationID.reservationBase] else {
                            // A forward edge onto an operation still to be submitted.
                            if !plan.forward.contains(where: { $0 == (k, number) }) { plan.forward.append((k, number)) }
                            continue
                        }
                        target = base + j
                    } else {
                        guard let j = index(of: id) else {
                            throw .unknownDependency(index: k, name: spec.name, reference: reference, suggestion: nil)
                        }
                        target = j
                    }
                }
                // Duplicates are ignored (SEMANTICS §3); a set keeps wide fan-ins linear.
                let isNew = seen != nil ? seen!.insert(target).inserted : !targets.contains(target)
                if isNew { targets.append(target) }
                if target >= base { hasBatchEdges = true }
            }
            plan.explicit.append(targets, rowIndex: k)
            for dependant in spec.dependants {
                guard let d = index(of: dependant) else {
                    throw .invalidField(index: k, name: spec.name, field: "dependants", problem: "names unknown operation \(dependant)")
                }
                // Like addDependency: an operation already dispatched or finished gets no edge.
                if operations[d].state <= .ready, !plan.dependants.contains(where: { $0 == (d, base + k) }) {
                    plan.dependants.append((d, base + k))
                }
            }
        }
        for (number, k) in takingUp.sorted(by: { $0.value < $1.value }) {
            plan.takenUp.append((k, number))
            for d in reservations.open[number]! where operations[d].state <= .ready && !plan.dependants.contains(where: { $0 == (d, base + k) }) {
                plan.dependants.append((d, base + k))
            }
        }
        for (k, row) in barrierDependencies(of: specs, base: base).enumerated() { plan.implicit.append(row, rowIndex: k) }
        hasBatchEdges = hasBatchEdges || !plan.implicit.isEmpty
        if hasBatchEdges, let cycle = Scheduler.findCycle(plan, count: specs.count) {
            throw .cycle(cycle.map { specs[$0].name.isEmpty ? "#\($0 + 1)" : specs[$0].name })
        }
        if let cycle = dependantCycle(plan) {
            throw .cycle(cycle.map { $0 >= base ? (specs[$0 - base].name.isEmpty ? "#\($0 - base + 1)" : specs[$0 - base].name) : id($0).description })
        }
        return plan
    }

    /// A cycle closed by one of the plan's `dependants` edges (global indexes, each depending on the
    /// next, the last on the first), or nil. Cycles inside the batch are `findCycle`'s.
    /// - Complexity: O(unfinished operations reachable from the edges' targets) per edge; only clients
    ///   that depend on operations not added yet send such edges.
    func dependantCycle(_ plan: SubmissionPlan) -> [Int]? {
        guard !plan.dependants.isEmpty else { return nil }
        var added: [Int: [Int]] = [:]
        for edge in plan.dependants { added[edge.dependant, default: []].append(edge.target) }
        func dependencies(of node: Int) -> [Int] {
            if node >= plan.base {
                // A finished operation holds nothing: a path through it is no cycle.
                return (Array(plan.explicit[node - plan.base]) + plan.implicit[node - plan.base])
                    .filter { $0 >= plan.base || operations[$0].state != .finished }
            }
            return operations[node].dependencies.compactMap { operations[$0.index].state != .finished ? $0.index : nil }
                + (added[node] ?? [])
        }
        for edge in plan.dependants {
            var parent = [edge.target: edge.target]
            var stack = [edge.target]
            while let node = stack.popLast() {
                if node == edge.dependant {
                    var path = [node]
                    while path.last != edge.target { path.append(parent[path.last!]!) }
                    return [edge.dependant] + path.reversed().dropLast()
                }
                for next in dependencies(of: node) where parent[next] == nil {
                    parent[next] = node
                    stack.append(next)
                }
            }
        }
        return nil
    }

    static func validateFields(_ spec: OperationSpec, index k: Int) throws(SubmissionError) {
        func invalid(_ field: String, _ problem: String) -> SubmissionError {
            .invalidField(index: k, name: spec.name, field: field, problem: problem)
        }
        if spec.queue.isEmpty { throw invalid("queue", "must not be empty") }
        if let problem = spec.resources.cpusProblem { throw invalid("cpus", problem) }
        if let problem = spec.resources.memoryProblem { throw invalid("memory", problem) }
        if spec.retries < 0 { throw invalid("retries", "must be 0 or more, not \(spec.retries)") }
        if spec.retries > Limits.maxRetries { throw invalid("retries", "must be at most \(Limits.maxRetries), not \(spec.retries)") }
        // The same range every other edge checks (Limits), so a timeout accepted here is never refused by a worker.
        if let timeout = spec.timeout {
            if !(timeout > 0) { throw invalid("timeout", "must be a positive number of seconds, not \(timeout)") }
            if !Limits.isValidDuration(timeout, positive: true) {
                throw invalid("timeout", "must be at most \(Int(Limits.maxSeconds)) seconds, not \(timeout)")
            }
        }
        switch spec.work {
        case .empty: break
        case .command(let command):
            if command.argv.isEmpty || command.argv[0].isEmpty { throw invalid("command", "must name a program") }
        case .commands(let commands):
            if commands.isEmpty { throw invalid("commands", "must hold at least one command") }
            if let bad = commands.firstIndex(where: { $0.argv.isEmpty || $0.argv[0].isEmpty }) {
                throw invalid("commands[\(bad)]", "must name a program")
            }
        case .handler(let name, _):
            if name.isEmpty { throw invalid("handler", "must be a handler name") }
        case .handlers(let calls):
            if let (field, problem) = Limits.handlerCallsProblem(calls) { throw invalid(field, problem) }
        }
    }

    /// The barrier edges each batch operation gets: a barrier waits for every unfinished operation added
    /// to its queue before it; any other operation waits for every unfinished barrier of its queue.
    func barrierDependencies(of specs: [OperationSpec], base: Int) -> [[Int]] {
        var result = [[Int]](repeating: [], count: specs.count)
        guard specs.contains(where: \.isBarrier) || queues.contains(where: { !$0.unfinishedBarriers.isEmpty }) else {
            return result
        }
        var addedMembers: [String: [Int]] = [:]
        var addedBarriers: [String: [Int]] = [:]
        for (k, spec) in specs.enumerated() {
            let existing = queueIndex[spec.queue].map { queues[$0] }
            if spec.isBarrier {
                let earlier = existing?.members.filter { operations[$0].state != .finished } ?? []
                result[k] = earlier + (addedMembers[spec.queue] ?? [])
                addedBarriers[spec.queue, default: []].append(base + k)
            } else {
                result[k] = (existing?.unfinishedBarriers ?? []) + (addedBarriers[spec.queue] ?? [])
            }
            addedMembers[spec.queue, default: []].append(base + k)
        }
        return result
    }

    /// A cycle among the batch's operations (batch positions, in dependency order), or nil.
    /// Existing operations never depend on new ones, so only the batch needs searching.
    static func findCycle(_ plan: SubmissionPlan, count: Int) -> [Int]? {
        // Kahn's algorithm over the batch: what is left over lies on or behind a cycle.
        // Dependants of each batch operation, stored flat (counting sort by target).
        var indegree = [Int](repeating: 0, count: count)
        var firstDependant = [Int](repeating: 0, count: count + 1)
        for k in 0..<count {
            for target in plan.explicit[k] where target >= plan.base { indegree[k] += 1; firstDependant[target - plan.base + 1] += 1 }
            for target in plan.implicit[k] where target >= plan.base { indegree[k] += 1; firstDependant[target - plan.base + 1] += 1 }
        }
        for k in 0..<count { firstDependant[k + 1] += firstDependant[k] }
        var fill = firstDependant
        var dependants = [Int](repeating: 0, count: firstDependant[count])
        for k in 0..<count {
            for target in plan.explicit[k] where target >= plan.base { dependants[fill[target - plan.base]] = k; fill[target - plan.base] += 1 }
            for target in plan.implicit[k] where target >= plan.base { dependants[fill[target - plan.base]] = k; fill[target - plan.base] += 1 }
        }
        var stack = (0..<count).filter { indegree[$0] == 0 }
        var done = 0
        while let k = stack.popLast() {
            done += 1
            for d in dependants[firstDependant[k]..<firstDependant[k + 1]] {
                indegree[d] -= 1
                if indegree[d] == 0 { stack.append(d) }
            }
        }
        guard done < count else { return nil }
        // Walk dependencies among the leftovers until a node repeats: that stretch is a cycle.
        var position = [Int: Int]()
        var path: [Int] = []
        var k = indegree.firstIndex(where: { $0 > 0 })!
        while position[k] == nil {
            position[k] = path.count
            path.append(k)
            let next = (Array(plan.explicit[k]) + plan.implicit[k]).first { $0 >= plan.base && indegree[$0 - plan.base] > 0 }!
            k = next - plan.base
        }
        return Array(path[position[k]!...])
    }

    /// The name among `names` closest to `name` by edit distance, if it is close enough to be a typo.
    static func closest(to name: String, among names: some Sequence<String>) -> String? {
        let target = Array(name)
        var best: (distance: Int, name: String)?
        for candidate in names {
            let distance = editDistance(target, Array(candidate))
            if distance <= max(1, target.count / 3), distance < (best?.distance ?? .max) || (distance == best?.distance && candidate < best!.name) {
                best = (distance, candidate)
            }
        }
        return best?.name
    }

    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// Puts a validated submission in place. Cannot fail.
    mutating func apply(_ submission: Submission, _ plan: SubmissionPlan) -> SubmissionReceipt {
        for (queue, settings) in submission.queueSettings {
            applySettings(settings, to: self.queue(named: queue))
        }
        let specs = submission.operations
        let base = plan.base
        let job = jobs.count
        jobs.append(JobRecord(first: base, count: specs.count, unfinished: specs.count))
        operations.reserveCapacity(base + specs.count)
        var lastQueue: (name: String, index: Int)?
        for spec in specs {
            let queue: Int
            if let last = lastQueue, last.name == spec.queue {
                queue = last.index
            } else {
                queue = self.queue(named: spec.queue)
                lastQueue = (spec.queue, queue)
            }
            let placement = spec.labels.isEmpty && spec.resources == .default ? 0 : self.placement(for: spec.labels, needs: spec.resources)
            operations.append(OperationRecord(
                name: spec.name, work: spec.work, sequence: nextSequence, timeout: spec.timeout ?? 0,
                job: UInt32(job), queue: UInt32(queue), placement: UInt32(placement),
                retriesLeft: UInt32(spec.retries), priority: spec.priority,
                qualityOfService: spec.qualityOfService, requires: spec.requires, isBarrier: spec.isBarrier))
            nextSequence += 1
            queues[queue].members.append(operations.count - 1)
            queues[queue].unfinished += 1
            if spec.isBarrier {
                queues[queue].unfinishedBarriers.append(operations.count - 1)
            } else {
                queues[queue].counts.pending += 1
                jobs[job].counts.pending += 1
            }
        }
        // Edges, and dependencies that already failed under `requires: success`.
        var doomed: [Int] = []
        for k in 0..<specs.count {
            let index = base + k
            for target in plan.implicit[k] { link(index, to: target, implicit: true) }
            for target in plan.explicit[k] {
                link(index, to: target, implicit: false)
                if operations[target].state == .finished, operations[target].outcome != .succeeded, specs[k].requires == .success {
                    doomed.append(index)
                }
            }
        }
        for (position, number) in plan.forward { addForwardEdge(base + position, on: number) }
        for taken in plan.takenUp { takeUp(taken.number) }
        for edge in plan.dependants {
            link(edge.dependant, to: edge.target, implicit: false)
            if operations[edge.dependant].state == .ready {
                leaveReady(edge.dependant)
                setState(edge.dependant, .pending)
                notify(edge.dependant)
            }
        }
        let receipt = SubmissionReceipt(job: JobID(index: job), operations: (base..<base + specs.count).map(id))
        effects.append(.journal(.submitted(receipt, submission)))
        for (k, spec) in specs.enumerated() where spec.isCancelled && !doomed.contains(base + k) { doomed.append(base + k) }
        for index in base..<base + specs.count {
            if operations[index].unfinishedDependencies == 0, !doomed.contains(index) {
                makeReady(index)
            } else {
                notify(index)
            }
        }
        for index in doomed {
            enqueueFinish(index, .cancelled, specs[index - base].isCancelled ? .cancelRequested : .dependencyFailed)
        }
        drainFinishes()
        pump()
        return receipt
    }

    /// Adds the edge "`index` depends on `target`" on both ends, counting it if `target` is unfinished.
    mutating func link(_ index: Int, to target: Int, implicit: Bool) {
        operations[index].dependencies.append(Edge(target, implicit: implicit))
        operations[target].dependants.append(Edge(index, implicit: implicit))
        if operations[target].state != .finished { operations[index].unfinishedDependencies += 1 }
    }
}
