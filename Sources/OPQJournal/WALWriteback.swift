import Foundation

/// The journal's background write-back of its WAL (see ``WALCheckpoints``): `fdatasync` of the WAL file
/// on a thread of its own, through a descriptor of its own.
///
/// The descriptor stays open for the life of the journal and is closed only after SQLite closed the
/// connection: closing any descriptor of a file drops the process's POSIX locks on it. It is opened read-only
/// (Linux syncs through any descriptor) on the WAL file SQLite opened with the journal; in exclusive locking mode
/// SQLite keeps that file (restarting it from its start, or truncating it) until the journal closes.
final class WALWriteback: Sendable {
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "opq.journal.wal-writeback", qos: .utility)
    private let state = NSLock()
    nonisolated(unsafe) private var running = false
    nonisolated(unsafe) private var syncs = 0

    /// Opens the WAL of the journal at `path`; nil when it cannot (SQLite's own syncs then do all the work).
    init?(journalPath path: String) {
        descriptor = open(path + "-wal", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
    }

    /// Whether a sync is under way.
    var isSyncing: Bool { state.withLock { running } }

    /// Background syncs ended so far.
    var completedSyncs: Int { state.withLock { syncs } }

    /// Starts a sync of the WAL, unless one is under way. Never waits for the disk.
    func start() {
        guard state.withLock({ () -> Bool in
            if running { return false }
            running = true
            return true
        }) else { return }
        queue.async { [self] in
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
        _ = Foundation.close(descriptor)
    }
}
