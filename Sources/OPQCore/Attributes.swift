/// An operation's place in its queue's dispatch order (Foundation's `Operation.QueuePriority`).
///
/// Higher runs first. Integers that are not one of the five levels snap toward `normal`,
/// stopping at the first level they reach (SEMANTICS §4.1).
public enum QueuePriority: Int8, CaseIterable, Sendable, Comparable, CustomStringConvertible {
    case veryLow = -8
    case low = -4
    case normal = 0
    case high = 4
    case veryHigh = 8

    /// Snaps any integer to a level: ≥ 8 → veryHigh, 4…7 → high, -3…3 → normal, -7…-4 → low, ≤ -8 → veryLow.
    public init(snapping value: Int) {
        switch value {
        case 8...: self = .veryHigh
        case 4...7: self = .high
        case -3...3: self = .normal
        case -7 ... -4: self = .low
        default: self = .veryLow
        }
    }

    /// Parses a level name (`veryHigh`, `high`, `normal`, `low`, `veryLow`) or an integer; nil for anything else.
    public init?(parsing text: String) {
        if let level = QueuePriority.allCases.first(where: { $0.description == text }) {
            self = level
        } else if let value = Int(text) {
            self.init(snapping: value)
        } else {
            return nil
        }
    }

    public static func < (lhs: QueuePriority, rhs: QueuePriority) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .veryLow: "veryLow"
        case .low: "low"
        case .normal: "normal"
        case .high: "high"
        case .veryHigh: "veryHigh"
        }
    }
}

/// How a worker runs an operation's process (CPU and I/O niceness); never the dispatch order.
public enum QualityOfService: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    case background, utility, `default`, userInitiated, userInteractive

    /// Parses a QoS name as written in job files; nil for anything else.
    public init?(parsing text: String) {
        guard let qos = QualityOfService.allCases.first(where: { $0.description == text }) else { return nil }
        self = qos
    }

    public var description: String {
        switch self {
        case .background: "background"
        case .utility: "utility"
        case .default: "default"
        case .userInitiated: "userInitiated"
        case .userInteractive: "userInteractive"
        }
    }
}

/// What an operation needs of its dependencies' outcomes (SEMANTICS §3).
public enum Requirement: UInt8, Sendable, CustomStringConvertible {
    /// Foundation's rule: any outcome satisfies the dependency.
    case any
    /// **beyond**: a dependency that fails or is cancelled cancels this operation (Slurm's `afterok`).
    case success

    public var description: String { self == .any ? "any" : "success" }
}
