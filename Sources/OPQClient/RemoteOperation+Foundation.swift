import Foundation
import OPQCore

// Foundation's own priority and quality-of-service types, accepted where opq's are (issue 12 item 7).
//
// OPQCore names its types `QueuePriority` and `QualityOfService` like Foundation's. A program that
// imports Foundation and OPQClient (not OPQCore) sees only Foundation's names at top level; opq's are
// reachable, without clashing, as `RemoteOperation.QueuePriority` and `RemoteOperation.QualityOfService`,
// and each converts from and to Foundation's:
//
// ```swift
// let local = BlockOperation {}
// local.queuePriority = .high
// let remote = RemoteOperation(command: ["make"])
// remote.queuePriority = .init(local.queuePriority)        // Operation.QueuePriority → opq
// remote.qualityOfService = .init(QualityOfService.utility) // Foundation's QualityOfService → opq
// ```

extension RemoteOperation {
    /// opq's queue priority (OPQCore's `QueuePriority`), named without clashing with Foundation's
    /// `Operation.QueuePriority`; the same five levels with the same raw values.
    public typealias QueuePriority = OPQCore.QueuePriority
    /// opq's quality of service (OPQCore's `QualityOfService`), named without clashing with Foundation's
    /// `QualityOfService`; the same five classes.
    public typealias QualityOfService = OPQCore.QualityOfService
}

extension OPQCore.QueuePriority {
    /// Foundation's priority as opq's: the same level (`.veryLow` … `.veryHigh`, raw values -8 … 8).
    public init(_ priority: Operation.QueuePriority) { self.init(snapping: priority.rawValue) }
}

extension Operation.QueuePriority {
    /// opq's priority as Foundation's: the same level.
    public init(_ priority: OPQCore.QueuePriority) {
        self = switch priority {
        case .veryLow: .veryLow
        case .low: .low
        case .normal: .normal
        case .high: .high
        case .veryHigh: .veryHigh
        }
    }
}

extension OPQCore.QualityOfService {
    /// Foundation's quality of service as opq's: the same class.
    public init(_ qos: Foundation.QualityOfService) {
        self = switch qos {
        case .userInteractive: .userInteractive
        case .userInitiated: .userInitiated
        case .utility: .utility
        case .background: .background
        case .default: .default
        @unknown default: .default
        }
    }
}

extension Foundation.QualityOfService {
    /// opq's quality of service as Foundation's: the same class.
    public init(_ qos: OPQCore.QualityOfService) {
        self = switch qos {
        case .userInteractive: .userInteractive
        case .userInitiated: .userInitiated
        case .utility: .utility
        case .background: .background
        case .default: .default
        }
    }
}
