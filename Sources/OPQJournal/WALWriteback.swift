import Foundation

/// The journal's background write-back of its WAL (see ``WALCheckpoints``): `fdatasync` of the WAL file
/// on a thread of its own, through a descriptor of its own.
///
/// The descriptor is opened (read-only: Linux syncs through any descriptor) at the first sync, when a
/// commit has surely created the WAL file — a new journal has none until its first write in WAL mode —
/// and stays open for the life of the journal, closed only after SQLite closed the connection: closing
/// a descriptor of a file drops the process's POSIX locks on it. In exclusive locking mode SQLite keeps
/// the WAL file (restarting it from its start, or truncating it) until the journal closes.
final class WALWriteback: Sendable {
    private let path: String
    /// The WAL's descriptor, -1 until the first sync; set and closed on the journal's thread only.
    nonisolated(unsafe) private var descriptor: Int32 = -1
    private let queue = DispatchQueue(label: "opq.journal.wal-writeback", qos: .utility)
    private let state = NSLock()
    nonisolated(unsafe) private var running = false
    nonisolated(unsafe) private var syncs = 0

    /// The write-back of the WAL of the journal at `journalPath`.
    init(journalPath: String) {
        path = journalPath + "-wal"
    }

    /// Whether a sync is under way.
    var isSyncing: Bool { state.withLock { running } }

    /// Background syncs ended so far.
    var completedSyncs: Int { state.withLock { syncs } }

    /// Starts a sync of the WAL, unless one is under way (or the WAL cannot be opened: SQLite's own syncs
    /// then do all the work). Never waits for the disk.
    func start() {
        if descriptor < 0 { descriptor = open(path, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0, state.withLock({ () -> Bool in
            if running { return false }
            running = true
            return true
        }) else { return }
        queue.async { [self, descriptor] in
            _ = fdatasync(descriptor)  // a failure is SQLite's to meet, in the checkpoint's own sync
            state.withLock {
                running = false
                syncs += 1
            }
        }
    }

    /// Waits for a sync under way, then closes the descriptor. Call after SQLite closed the journal.
    func close() {
        queue.sync {}
        if descriptor >= 0 { _ = Foundation.close(descriptor) }
        descriptor = -1
    }
}
