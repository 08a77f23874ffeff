import Foundation
import OPQCore

/// The per-operation options `opq add` and `opq map` share, checked the way job files are.
enum OperationOptions {
    /// An operation spec with these settings and no work yet; a bad value is a usage error naming the option.
    static func spec(queue: String, priority: String, qos: String, requires: String, retries: Int,
                     timeout: Double?) throws(ExitStatus) -> OperationSpec {
        guard !queue.isEmpty else { throw fail(.usage, "--queue must not be empty") }
        guard let level = QueuePriority(parsing: priority) else {
            throw fail(.usage, "--priority '\(priority)' is not veryLow, low, normal, high, veryHigh or an integer")
        }
        guard let service = QualityOfService(parsing: qos) else {
            throw fail(.usage, "--qos '\(qos)' is not one of " + QualityOfService.allCases.map(\.description).joined(separator: ", "))
        }
        let requirement: Requirement
        switch requires {
        case "any": requirement = .any
        case "success": requirement = .success
        default: throw fail(.usage, "--requires '\(requires)' is not 'any' or 'success'")
        }
        return OperationSpec(queue: queue, priority: level, qualityOfService: service, requires: requirement,
                             retries: retries, timeout: timeout)
    }
}
