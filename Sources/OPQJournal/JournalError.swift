import GRDB

/// Why the state directory or its journal cannot be used. Each is fatal for a coordinator: it refuses
/// to start rather than start empty and drop acknowledged work (SEMANTICS §10).
public enum JournalError: Error, CustomStringConvertible {
    /// The state directory cannot be created or opened.
    case directory(path: String, problem: String)
    /// Another process (a second coordinator) holds the state directory's lock.
    case locked(path: String, holder: String?)
    /// Another process holds the journal file's own lock (SQLite's exclusive locking mode): a second
    /// coordinator whose state directory's lock file was removed or replaced.
    case journalLocked(path: String)
    /// The journal file exists but is empty (0 bytes): opq never leaves one (it writes the schema before
    /// anything else), so something else truncated or created it.
    case empty(path: String)
    /// The journal file exists but cannot be opened or read (permissions, I/O error).
    case unreadable(path: String, problem: String)
    /// The journal file is not an opq journal, or SQLite finds it damaged.
    case corrupt(path: String, problem: String)
    /// The journal was written by a newer opq (schema version).
    case newerSchema(path: String, version: Int)
    /// A record cannot be replayed: the journal contradicts itself (e.g. two coordinators wrote it).
    case inconsistent(path: String, record: Int64, problem: String)
    /// A write failed (I/O error); nothing of the turn was acknowledged.
    case writeFailed(path: String, problem: String)
    /// A write failed because the journal's file system is full (`SQLITE_FULL`): nothing of it was
    /// written, and what was queued is still queued (``Journal/commit()`` can be called again).
    case diskFull(path: String)

    public var description: String {
        switch self {
        case let .directory(path, problem):
            "cannot use state directory \(path): \(problem). Pass another one with --state DIR."
        case let .locked(path, holder):
            "state directory \(path) is in use by another opq-coordinator" + (holder.map { " (\($0))" } ?? "")
                + ". Stop it first, or pass another directory with --state DIR."
        case .journalLocked(let path):
            "the journal \(path) is locked by another process: another opq-coordinator still runs on this state directory "
                + "(was its lock file removed?). Stop it first, or pass another directory with --state DIR."
        case .empty(let path):
            "the journal \(path) is empty (0 bytes): opq never leaves an empty journal, so the file was truncated or made by "
                + "something else, and any acknowledged work in it is gone. opq leaves it untouched; move it away "
                + "(mv \(path) \(path).empty) to start fresh, or restore it from a backup."
        case let .unreadable(path, problem):
            "cannot read the journal \(path): \(problem). Fix its permissions or storage; opq will not start empty over it."
        case let .corrupt(path, problem):
            "the journal \(path) is damaged or not an opq journal: \(problem). Move it aside to start empty "
                + "(its acknowledged work is then lost), or restore it from a backup."
        case let .newerSchema(path, version):
            "the journal \(path) has schema version \(version), newer than this opq understands. Run a newer opq-coordinator."
        case let .inconsistent(path, record, problem):
            "the journal \(path) cannot be replayed at commit \(record): \(problem). opq changed nothing in it. Keep a copy; "
                + "then restore it from a backup, or move it aside to start empty (its acknowledged work is then lost)."
        case let .writeFailed(path, problem):
            "cannot write the journal \(path): \(problem)."
        case .diskFull(let path):
            "the coordinator's state disk is full (\(path)): free space; nothing was accepted"
        }
    }

    /// Whether another process holds the state directory or the journal.
    var isLocked: Bool {
        switch self {
        case .locked, .journalLocked: true
        default: false
        }
    }

    /// Maps an SQLite error met while opening or reading `path`.
    static func reading(_ error: Error, path: String) -> JournalError {
        guard let error = error as? DatabaseError else { return .unreadable(path: path, problem: "\(error)") }
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT, .SQLITE_FORMAT:
            return .corrupt(path: path, problem: error.message ?? "\(error.resultCode)")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return .journalLocked(path: path)
        case .SQLITE_FULL:
            return .diskFull(path: path)
        default:
            return .unreadable(path: path, problem: error.message ?? "\(error.resultCode)")
        }
    }
}
