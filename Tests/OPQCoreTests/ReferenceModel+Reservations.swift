import OPQCore

/// Reservations in the reference model (issue 18), from the documentation of `Scheduler.reserve`:
/// forward edges hold an operation pending; a submission takes a reservation up (its forward edges
/// become edges onto the new operation, refused whole if that closes a cycle); a cancel gives it up
/// (as if its operation finished `cancelled`).
extension ReferenceModel {
    /// Hands out `count` reservations; nil when the count is out of range.
    mutating func reserve(_ count: Int) -> [Int]? {
        guard count >= 1, count <= Limits.maxReservations else { return nil }
        let numbers = Array(handedOut + 1...handedOut + count)
        handedOut += count
        for number in numbers { reservations[number] = [] }
        return numbers
    }

    /// Gives reservation `number` up; false when it is not open.
    mutating func cancelReservation(_ number: Int) -> Bool {
        guard let dependants = reservations.removeValue(forKey: number) else { return false }
        for d in dependants where ops[d - 1].state == .pending && ops[d - 1].requires == .success {
            finish(d - 1, .cancelled)
        }
        settle()
        return true
    }

    mutating func addForwardDependency(_ id: Int, on number: Int) -> EditResult {
        guard isKnown(id), let dependants = reservations[number] else { return .unknown }
        guard ops[id - 1].state <= .ready, !dependants.contains(id) else { return .ignored }
        reservations[number]!.append(id)
        if ops[id - 1].state == .ready { ops[id - 1].state = .pending }
        settle()
        return .done
    }

    mutating func removeForwardDependency(_ id: Int, on number: Int) -> EditResult {
        guard isKnown(id), let dependants = reservations[number] else { return .unknown }
        guard dependants.contains(id) else { return .ignored }
        reservations[number]!.removeAll { $0 == id }
        settle()
        return .done
    }

    /// Whether the dependency graph of unfinished operations has a cycle (brute force).
    func hasCycle() -> Bool {
        var done = Set<Int>()
        for start in ops where start.state != .finished && !done.contains(start.id) {
            if reaches(from: start.id, toItselfAvoiding: &done) { return true }
        }
        return false
    }

    private func reaches(from start: Int, toItselfAvoiding done: inout Set<Int>) -> Bool {
        var onPath = Set<Int>()
        func visit(_ id: Int) -> Bool {
            if onPath.contains(id) { return true }
            if done.contains(id) { return false }
            onPath.insert(id)
            for dep in op(id).explicit + op(id).implicit where !isFinished(dep) {
                if visit(dep) { return true }
            }
            onPath.remove(id)
            done.insert(id)
            return false
        }
        return visit(start)
    }
}
