import OPQCore
import OPQWire

// Misuse that Foundation answers with a hang or an abort, answered here with an error a caller can act
// on (SEMANTICS §9). The other cases are handled where they arise: adding an operation twice or to two
// queues throws ``ClientError/alreadyAdded(operation:)``, waiting for an operation never added returns at
// once (``RemoteOperation/waitUntilFinished()``), and any timeout is safe (``WaitDeadline``).

extension RemoteOperation {
    /// The refusal of ``addDependency(_:)`` with the operation itself: a dependency cycle of one
    /// (Foundation records it, and the operation never becomes ready). Nothing changes.
    var selfDependencyRefusal: ClientError {
        var error = Opq_V1_Error()
        error.code = .cycle
        error.message = "dependency cycle: \(self) cannot depend on itself; it would never become ready"
        condition.withLock {
            error.name = definition.name
            error.cycleNames = [definition.name]
            if let placement { error.cycleOperations = [placement.id.rawValue] }
        }
        return .refused(Refusal(error))
    }
}
