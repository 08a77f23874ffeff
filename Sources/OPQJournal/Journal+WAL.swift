import Foundation
import GRDB
import GRDBSQLite

/// The journal's WAL upkeep, in place of SQLite's automatic checkpoint: SQLite's WAL hook hands it the
/// WAL's length after every commit; it checkpoints when ``WALCheckpoints`` says so and starts the
/// background syncs of ``WALWriteback``. Used on the journal's thread only (the hook runs inside the
/// commit); the background thread touches only its own descriptor, never the connection, so a commit
/// never waits for it.
final class WALUpkeep {
    private let connection: SQLiteConnection
    private var policy: WALCheckpoints
    /// The background write-back (nil with ``Journal/Sync/powerLoss``).
    let writeback: WALWriteback?
    /// Checkpoints run (attempted) so far.
    private(set) var checkpoints = 0

    /// Installs itself as the WAL hook of `connection` (which turns SQLite's automatic checkpoint off),
    /// until ``uninstall()``, to be called before the connection closes.
    init(connection: SQLiteConnection, policy: WALCheckpoints, writeback: WALWriteback?) {
        self.connection = connection
        self.policy = policy
        self.writeback = writeback
        sqlite3_wal_hook(connection, { context, connection, schema, frames in
            guard let context else { return SQLITE_OK }
            Unmanaged<WALUpkeep>.fromOpaque(context).takeUnretainedValue().committed(frames: Int(frames), schema: schema)
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Removes the hook (no checkpoint is run from it any more).
    func uninstall() {
        sqlite3_wal_hook(connection, nil, nil)
    }

    /// The WAL's length, in frames, after the last commit.
    var frames: Int { policy.frames }

    /// After a commit that left the WAL `frames` frames long.
    func committed(frames: Int, schema: UnsafePointer<CChar>?) {
        switch policy.committed(frames: frames, syncing: { writeback?.isSyncing ?? false }) {
        case .checkpoint:
            checkpoints += 1
            // PASSIVE, as SQLite's automatic checkpoint: a failure (a full disk) leaves the WAL as it is, and
            // the next commit tries again; the commit that called it has succeeded either way.
            _ = sqlite3_wal_checkpoint_v2(connection, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        case .sync:
            writeback?.start()
        case .doNothing:
            break
        }
    }
}

extension Journal {
    /// The WAL's length at which a checkpoint is due: SQLite's own default, so the WAL file (reused from
    /// its start after each checkpoint) stays about 4 MiB.
    static let checkpointFrames = 1_000
    /// The WAL's length at which a checkpoint runs whatever the background sync is doing.
    static let maxCheckpointFrames = 2 * checkpointFrames
    /// Frames between background syncs of the WAL (512 KiB of 4 KiB pages).
    static let syncFrames = 128
}
