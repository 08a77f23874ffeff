import OPQCore

/// The graph shapes the benchmark drives through the core and through Foundation.
enum Shape: String, CaseIterable, Codable {
    /// N operations with no dependencies, submitted as one batch.
    case independent
    /// Operation k depends on operation k-1.
    case chain
    /// N-1 independent operations and one that depends on all of them.
    case fanIn = "fan-in"
    /// Operation k depends on 0…3 distinct earlier operations, chosen by a seeded generator.
    case randomDAG = "random-dag"

    /// Parses a flag value: the raw value, or a short alias (`fanin`, `dag`).
    init?(flag: String) {
        switch flag.lowercased() {
        case "independent", "indep": self = .independent
        case "chain": self = .chain
        case "fan-in", "fanin": self = .fanIn
        case "random-dag", "dag", "randomdag": self = .randomDAG
        default: return nil
        }
    }
}

/// One shape at one size: the dependency lists, shared by the core and the Foundation runs so both
/// execute exactly the same graph. Stored as compressed rows (one flat array of edges plus offsets).
struct Workload {
    /// The shape.
    let shape: Shape
    /// Number of operations.
    let size: Int
    /// Dependencies of operation k are `edges[offsets[k]..<offsets[k+1]]` (earlier operations only).
    private(set) var offsets: [Int32]
    /// Flat list of dependency targets.
    private(set) var edges: [Int32]

    /// Seed of the random DAG (fixed, so every run and both engines see the same graph).
    static let seed: UInt64 = 0x6F70_715F_6265_6E63  // "opq_benc"

    /// Builds the dependency lists of `shape` at `size`.
    init(_ shape: Shape, size: Int) {
        precondition(size >= 2 && size < Int(Int32.max), "size must be in 2..<2^31")
        self.shape = shape
        self.size = size
        offsets = [0]
        offsets.reserveCapacity(size + 1)
        edges = []
        switch shape {
        case .independent:
            offsets = [Int32](repeating: 0, count: size + 1)
        case .chain:
            edges.reserveCapacity(size - 1)
            offsets.append(0)
            for k in 1..<size {
                edges.append(Int32(k - 1))
                offsets.append(Int32(edges.count))
            }
        case .fanIn:
            offsets.append(contentsOf: [Int32](repeating: 0, count: size - 1))
            edges = (0..<Int32(size - 1)).map { $0 }
            offsets.append(Int32(edges.count))
        case .randomDAG:
            var random = SplitMix64(seed: Workload.seed)
            edges.reserveCapacity(size * 3 / 2)
            for k in 0..<size {
                let count = min(k, Int(random.next() % 4))
                let start = edges.count
                while edges.count - start < count {
                    let target = Int32(random.next() % UInt64(k))
                    if !edges[start...].contains(target) { edges.append(target) }
                }
                offsets.append(Int32(edges.count))
            }
        }
    }

    /// The dependencies of operation `k`.
    func dependencies(of k: Int) -> ArraySlice<Int32> {
        edges[Int(offsets[k])..<Int(offsets[k + 1])]
    }

    /// Total number of dependency edges.
    var edgeCount: Int { edges.count }

    /// Whether operation `k` must carry a name (some later operation refers to it).
    private func isReferenced(_ k: Int) -> Bool {
        switch shape {
        case .independent: false
        case .chain: k < size - 1
        case .fanIn: k < size - 1
        case .randomDAG: true
        }
    }

    /// The core submission: one batch, every operation a handler `noop` with an empty payload (no
    /// command text, no heap behind the work), named `o<k>` only where referenced (names up to 15 bytes
    /// are stored inline by Swift, so they add no heap either). Dependencies refer to names, because ids
    /// can only name operations accepted earlier, not ones of the same batch.
    func submission() -> Submission {
        var specs: [OperationSpec] = []
        specs.reserveCapacity(size)
        let work = Work.handler(name: "noop", payload: [])
        for k in 0..<size {
            let dependencies = self.dependencies(of: k).map { DependencyReference.name(Workload.name(Int($0))) }
            specs.append(OperationSpec(name: isReferenced(k) ? Workload.name(k) : "", work: work, dependencies: dependencies))
        }
        return Submission(specs)
    }

    /// The name of operation `k` in the submission.
    static func name(_ k: Int) -> String { "o" + String(k) }
}
