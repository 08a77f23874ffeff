import GRDB

/// Why the state directory or its journal cannot be used. Each is fatal for a coordinator: it refuses
/// to start rather than start empty and drop acknowledged work (SEMANTICS §10).
public enum JournalError: Error, CustomStringConvertible {
    /// The state directory cannot be created or opened.
    case directory(path: String, problem: String)
    /// Another process (a second coordinator) holds the state directory's lock.
    case locked(path: String, holder: String?)
    /// The journal file exists but cannot be opened or read (permissions, I/O error).
    case unreadable(path: String, problem: String)
    /// The journal file is not an opq journal, or SQLite finds it damaged.
    case corrupt(path: String, problem: String)
    /// The journal was written by a newer opq (schema version).
    case newerSchema(path: String, version: Int)
    /// A record cannot be replayed: the journal contradicts itself.
    case inconsistent(path: String, record: Int64, problem: String)
    /// A write failed (disk full, I/O error); nothing of the turn was acknowledged.
    case writeFailed(path: String, problem: String)

    public var description: String {
        switch self {
        case let .directory(path, problem):
            "cannot use state directory \(path): \(problem). Pass another one with --state DIR."
        case let .locked(path, holder):
            "state directory \(path) is in use by another opq-coordinator" + (holder.map { " (\($0))" } ?? "")
                + ". Stop it first, or pass another directory with --state DIR."
        case let .unreadable(path, problem):
            "cannot read the journal \(path): \(problem). Fix its permissions or storage; opq will not start empty over it."
        case let .corrupt(path, problem):
            "the journal \(path) is damaged or not an opq journal: \(problem). Move it aside to start empty "
                + "(its acknowledged work is then lost), or restore it from a backup."
        case let .newerSchema(path, version):
            "the journal \(path) has schema version \(version), newer than this opq understands. Run a newer opq-coordinator."
        case let .inconsistent(path, record, problem):
            "the journal \(path) cannot be replayed at record \(record): \(problem)."
        case let .writeFailed(path, problem):
            "cannot write the journal \(path): \(problem)."
        }
    }

    /// Maps an SQLite error met while opening or reading `path`.
    static func reading(_ error: Error, path: String) -> JournalError {
        guard let error = error as? DatabaseError else { return .unreadable(path: path, problem: "\(error)") }
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT, .SQLITE_FORMAT:
            return .corrupt(path: path, problem: error.message ?? "\(error.resultCode)")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return .locked(path: path, holder: nil)
        default:
            return .unreadable(path: path, problem: error.message ?? "\(error.resultCode)")
        }
    }
}
