/// The coordinator-assigned identity of an operation: stable, never reused, increasing in submission order.
///
/// Ids start at 1. Within one submission they are contiguous and follow the batch's order.
public struct OperationID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The numeric id as it appears on the wire and in the CLI.
    public let rawValue: UInt64

    /// Wraps a numeric id.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: OperationID, rhs: OperationID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        isReservation ? "op-r\(rawValue - OperationID.reservationBase)" : "op-\(rawValue)"
    }

    /// Ids in `reservationBase + 1 ... reservationBase + maxReservationNumber` are *reservations*: ids the
    /// coordinator hands out (``Scheduler/reserve(_:at:)``) for an operation its client has not submitted
    /// yet, so that accepted operations can depend on it (Foundation lets an operation depend on one that
    /// no queue has yet). They never collide with submitted operations' ids, which are dense from 1. A
    /// reservation shows as `op-rN`.
    public static let reservationBase: UInt64 = 1 << 62
    /// The most reservations a coordinator hands out over its life (2^40).
    public static let maxReservationNumber: UInt64 = 1 << 40

    /// Whether this id is a reservation (see ``reservationBase``), not a submitted operation.
    public var isReservation: Bool {
        rawValue > OperationID.reservationBase && rawValue - OperationID.reservationBase <= OperationID.maxReservationNumber
    }

    /// The reservation numbered `number` (1-based).
    public static func reservation(_ number: UInt64) -> OperationID { OperationID(reservationBase + number) }

    /// Parses an id as ``description`` writes it: `op-N` (any N ≥ 1) or a
    /// reservation `op-rN` (1 ≤ N ≤ 2^40); nil for anything else.
    public init?(parsing text: String) {
        guard text.hasPrefix("op-") else { return nil }
        let rest = text.dropFirst(3)
        if rest.hasPrefix("r") {
            guard let number = UInt64(rest.dropFirst()), number >= 1, number <= OperationID.maxReservationNumber else { return nil }
            self = .reservation(number)
        } else {
            guard let value = UInt64(rest), value >= 1 else { return nil }
            self.init(value)
        }
    }

    /// Position of the operation in the core's dense storage of `count` operations, or nil when no
    /// operation with this id can be there (0, beyond `count`, or beyond `Int.max`): total for any id
    /// from outside.
    func index(below count: Int) -> Int? { OperationID.storageIndex(rawValue, below: count) }

    /// The dense-storage position of the 1-based `rawValue`, if it is below `count`.
    static func storageIndex(_ rawValue: UInt64, below count: Int) -> Int? {
        guard rawValue >= 1, rawValue - 1 < UInt64(max(0, count)) else { return nil }
        return Int(rawValue - 1)
    }

    init(index: Int) { self.rawValue = UInt64(index) + 1 }
}

/// The identity of a job: one accepted submission batch.
public struct JobID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The numeric id as it appears on the wire and in the CLI.
    public let rawValue: UInt64

    /// Wraps a numeric id.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: JobID, rhs: JobID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "job-\(rawValue)" }

    /// Position of the job in the core's dense storage of `count` jobs, or nil (see ``OperationID``).
    func index(below count: Int) -> Int? { OperationID.storageIndex(rawValue, below: count) }

    init(index: Int) { self.rawValue = UInt64(index) + 1 }
}

/// The identity of a worker: its stable ZeroMQ routing id, chosen by the worker.
public struct WorkerID: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The routing id as text.
    public let name: String

    /// Wraps a worker name.
    public init(_ name: String) { self.name = name }

    public init(stringLiteral value: String) { self.name = value }

    public var description: String { name }
}

/// A point in time, in seconds, on the clock the shell injects (the core never reads a clock).
public typealias Timestamp = Double
