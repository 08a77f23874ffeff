/// When the journal's WAL is checkpointed, and when it is written back in the background (issue 19): a
/// pure value, fed the WAL's length after each commit.
///
/// SQLite checkpoints by itself (every 1,000 WAL pages) inside the commit that crosses the mark, on the
/// coordinator's loop, and a checkpoint waits for the disk three times: it fsyncs the WAL (every frame
/// written since the last checkpoint, ≈ 4 MB), copies the pages to the database file and fsyncs that,
/// and the next commit, restarting the WAL from its start, fsyncs the WAL's new header. Those syncs
/// keep the journal whole across a power loss (the database must not be overwritten with pages the WAL
/// could still lose, nor the WAL restarted before the database holds its pages), so they stay; what
/// moves off the loop is the writing. A background thread fdatasyncs the WAL every ``syncFrames``
/// frames (``WALWriteback``), and a checkpoint that is due waits — commits go on — until such a sync
/// that began past the mark has ended: the checkpoint's own WAL sync then finds only the frames of the
/// last few turns to write. ``maxFrames`` bounds the WAL however slow the disk: there the checkpoint
/// runs whatever the background sync is doing.
///
/// Measured (`opq-bench cluster`, a 10,000-link chain of the one-process cluster, `perf trace` of the
/// coordinator): the loop's fsync time fell from 36.9 to 8.8 ms on a quiet disk (10 checkpoints, 3
/// syncs each: ≈ 0.9 µs per link instead of 3.7), the background thread's 80 syncs taking 57 ms
/// beside it. On a disk busy with another writer each sync waits milliseconds for the device however
/// little it writes, and the loop's share stays ≈ 6–9 µs per link: the checkpoint's three waits remain.
///
/// Without a background write-back (``Journal/Sync/powerLoss``: every commit already fsyncs the WAL) a
/// checkpoint runs as soon as it is due, as SQLite's own would.
struct WALCheckpoints {
    /// What the commit that just ended should do.
    enum Action: Equatable {
        /// Checkpoint the WAL now (on the committing thread).
        case checkpoint
        /// Start a background sync of the WAL (of its first `frames` frames at least).
        case sync(frames: Int)
        /// Nothing.
        case doNothing
    }

    /// The WAL's length, in frames, at which a checkpoint is due.
    let checkpointFrames: Int
    /// The WAL's length at which a checkpoint runs even while a background sync is under way.
    let maxFrames: Int
    /// Frames between background syncs; nil: no background sync (the checkpoint runs when due).
    let syncFrames: Int?
    /// The WAL's length when the last background sync was started (0: none since the WAL restarted).
    private(set) var syncedFrom = 0
    /// The WAL's length after the previous commit.
    private(set) var frames = 0

    init(checkpointFrames: Int, maxFrames: Int, syncFrames: Int?) {
        precondition(checkpointFrames > 0 && maxFrames >= checkpointFrames && (syncFrames ?? 1) > 0,
                     "WALCheckpoints: checkpoint at \(checkpointFrames), at most \(maxFrames), sync every \(syncFrames ?? 0)")
        self.checkpointFrames = checkpointFrames
        self.maxFrames = maxFrames
        self.syncFrames = syncFrames
    }

    /// A commit left the WAL `frames` frames long; `syncing` tells whether a background sync is under
    /// way (asked only when it matters: a sync or a checkpoint is due).
    /// - Complexity: O(1).
    mutating func committed(frames: Int, syncing: () -> Bool) -> Action {
        // A shorter WAL: it restarted after a checkpoint, and none of its frames since was synced.
        if frames < self.frames { syncedFrom = 0 }
        self.frames = frames
        guard let syncFrames else { return frames >= checkpointFrames ? .checkpoint : .doNothing }
        if frames >= maxFrames { return .checkpoint }
        if frames >= checkpointFrames {
            // Due: once a sync started past the mark has ended; else start one.
            guard !syncing() else { return .doNothing }
            if syncedFrom >= checkpointFrames { return .checkpoint }
        } else if frames - syncedFrom < syncFrames || syncing() {
            return .doNothing
        }
        syncedFrom = frames
        return .sync(frames: frames)
    }
}
