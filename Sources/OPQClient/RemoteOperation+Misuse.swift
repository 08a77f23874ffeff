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

extension RemoteOperation {
    /// The refusal of a dependency of this operation, added (or being added) through `coordinator`, on
    /// `dependency`, added through a connection to another coordinator (another endpoint): ids belong to
    /// one coordinator, so the edge would name some other operation there, or none. Nil when `dependency`
    /// was not added yet or both go to the same endpoint.
    func foreignDependencyRefusal(on dependency: RemoteOperation, coordinator: RemoteCoordinator) -> ClientError? {
        guard let theirs = dependency.condition.withLock({ dependency.placement }),
              theirs.coordinator !== coordinator, theirs.coordinator.endpoint != coordinator.endpoint else { return nil }
        var error = Opq_V1_Error()
        error.code = .unknownDependency
        error.message = "\(self) cannot depend on \(dependency): that one was added through the coordinator at "
            + "\(theirs.coordinator.endpoint), this one goes to \(coordinator.endpoint), and a dependency holds only "
            + "within one coordinator. Add both through the same coordinator"
        error.name = name
        error.reference = Opq_V1_DependencyRef(.id(theirs.id))
        return .refused(Refusal(error))
    }

    /// Throws ``foreignDependencyRefusal(on:coordinator:)`` for the first dependency of `operations`
    /// that was added through another coordinator; called before they are submitted through `coordinator`.
    static func checkDependencies(of operations: [RemoteOperation], coordinator: RemoteCoordinator) throws(ClientError) {
        for operation in operations {
            for dependency in operation.dependencies {
                if let refusal = operation.foreignDependencyRefusal(on: dependency, coordinator: coordinator) { throw refusal }
            }
        }
    }
}
