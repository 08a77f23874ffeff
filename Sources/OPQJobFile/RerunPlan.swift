import OPQCore

/// Which operations of a job to run again (`opq run FILE --resume`, `opq retry JOB`): those that did
/// not succeed last time, and — as make would — every operation that depends on one of them, directly
/// or not, since it consumed what is now being redone. An operation that succeeded and depends on
/// nothing rerun is left out; edges to it are dropped from the rerun (it already succeeded).
///
/// Operations are known by name (unique in a job file); an unnamed one always runs again.
public enum RerunPlan {
    /// The names of `operations` to run again, given the names whose last run is to be kept (they
    /// succeeded and have not changed since).
    ///
    /// - Complexity: O(operations + edges).
    public static func rerun(_ operations: [OperationSpec], keeping kept: Set<String>) -> Set<String> {
        var dependants: [String: [String]] = [:]
        for spec in operations {
            for case .name(let dependency) in spec.dependencies { dependants[dependency, default: []].append(spec.name) }
        }
        var rerun: Set<String> = []
        var pending = operations.map(\.name).filter { $0.isEmpty || !kept.contains($0) }
        while let name = pending.popLast() {
            guard rerun.insert(name).inserted, !name.isEmpty else { continue }
            pending += dependants[name] ?? []
        }
        return rerun
    }

    /// `submission` with only the operations named in `names` (and the unnamed ones), their
    /// dependencies on operations left out dropped.
    public static func submission(_ submission: Submission, keeping names: Set<String>) -> Submission {
        var result = submission
        result.operations = submission.operations.filter { $0.name.isEmpty || names.contains($0.name) }.map { spec in
            var spec = spec
            spec.dependencies = spec.dependencies.filter { if case .name(let name) = $0 { names.contains(name) } else { true } }
            return spec
        }
        return result
    }

    /// A text that changes whenever what an operation does changes (its work, queue, placement,
    /// limits and dependencies): a stored success counts only while this is the same. Stable across
    /// processes (no hashing with a per-process seed).
    public static func fingerprint(_ spec: OperationSpec) -> String {
        func command(_ command: Command) -> String {
            (command.argv + [command.workingDirectory ?? "-"] + command.environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
                .map { "\($0.utf8.count):\($0)" }.joined()
        }
        let work = switch spec.work {
        case .empty: "empty"
        case .command(let one): "command " + command(one)
        case .commands(let many): "commands " + many.map(command).joined(separator: "|")
        case .handler(let name, let payload): "handler \(name.utf8.count):\(name) " + payload.map { String($0, radix: 16) }.joined(separator: ",")
        case .handlers(let calls):
            "handlers " + calls.map { "\($0.name.utf8.count):\($0.name) " + $0.payload.map { String($0, radix: 16) }.joined(separator: ",") }.joined(separator: "|")
        }
        let labels = spec.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        return [work, "queue \(spec.queue)", "labels \(labels)", "requires \(spec.requires)", "timeout \(spec.timeout.map { "\($0)" } ?? "-")",
                "barrier \(spec.isBarrier)", "after \(spec.dependencies.map(\.description).joined(separator: ","))"].joined(separator: "\n")
    }
}
