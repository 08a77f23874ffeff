import OPQCore

extension Opq_V1_Blocker {
    /// The wire form of one reason an operation has not started, with its text.
    public init(_ blocker: Scheduler.Blocker) {
        self.init()
        text = blocker.description
        switch blocker {
        case .dependencies(let ids):
            kind = .dependencies
            operations = ids.map(\.rawValue)
        case .retryBackoff:
            kind = .retryBackoff
        case .queueSuspended(let name):
            kind = .queueSuspended
            queue = name
        case .queueAtLimit(let name, let maximum):
            kind = .queueAtLimit
            queue = name
            limit = Int32(clamping: maximum)
        case .noWorker(let name, let required):
            kind = .noWorker
            queue = name
            labels = required
        case .workersBusy:
            kind = .workersBusy
        case .tooLarge:
            kind = .tooLarge
        case .resourcesBusy:
            kind = .resourcesBusy
        }
    }
}
