import Foundation
import GRDB
import GRDBSQLite

/// The statements of a journal commit (``Journal/commit()``), prepared once and run through SQLite's C
/// API on the journal's connection.
///
/// At one slot per worker every operation is a loop turn and every turn a commit of one small row, so
/// the commit's fixed cost is the coordinator's: through GRDB (its queue's `DispatchQueue.sync`, the
/// statement cache lookups, `StatementArguments`, the will/did-execute bookkeeping, a `Data` copy of
/// the row) a commit took ≈ 43k instructions, of which SQLite itself ≈ 19k (callgrind, a chain of
/// no-ops). Here a commit is SQLite's work plus a few calls: the row's bytes are bound in place.
///
/// Same SQL, same transaction as before (`BEGIN IMMEDIATE` … `COMMIT`, on any failure a `ROLLBACK`; a
/// commit of the turn's row alone is that one statement, its own transaction), same errors (`DatabaseError` with SQLite's result code, so a full disk is still
/// ``JournalError/diskFull(path:)``). Used only by the journal's one thread, between GRDB's own uses of
/// the connection, never inside one; every statement is reset after it ran, so none holds a lock or a
/// read transaction (VACUUM and GRDB's statements are not disturbed). Finalized when the journal goes,
/// before GRDB closes the connection.
final class CommitStatements {
    private let connection: SQLiteConnection
    let begin: RawStatement
    let commit: RawStatement
    let rollback: RawStatement
    let insertEntries: RawStatement
    let insertOutput: RawStatement
    let insertResult: RawStatement
    let deleteOutputs: RawStatement
    let deleteResults: RawStatement

    init(connection: SQLiteConnection) throws {
        self.connection = connection
        // GRDB's commit and rollback hooks serve its transaction observers (the journal has none) and
        // expect every transaction to run on its queue: they would trap on a COMMIT stepped here.
        sqlite3_commit_hook(connection, nil, nil)
        sqlite3_rollback_hook(connection, nil, nil)
        begin = try RawStatement("BEGIN IMMEDIATE TRANSACTION", connection: connection)
        commit = try RawStatement("COMMIT TRANSACTION", connection: connection)
        rollback = try RawStatement("ROLLBACK TRANSACTION", connection: connection)
        insertEntries = try RawStatement("INSERT INTO journal (entries) VALUES (?)", connection: connection)
        insertOutput = try RawStatement("""
            INSERT OR REPLACE INTO outputs (operation, exit_code, signal, duration, stdout, stdout_total, stderr, stderr_total, message, worker, ended_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, connection: connection)
        insertResult = try RawStatement("INSERT OR REPLACE INTO results (operation, result) VALUES (?, ?)", connection: connection)
        deleteOutputs = try RawStatement("DELETE FROM outputs WHERE operation BETWEEN ? AND ?", connection: connection)
        deleteResults = try RawStatement("DELETE FROM results WHERE operation BETWEEN ? AND ?", connection: connection)
    }

    /// Deletes the output and result rows of operations `first` through `last` (forgotten operations).
    func deleteOutputs(from first: UInt64, through last: UInt64) throws {
        for statement in [deleteOutputs, deleteResults] {
            statement.bind(1, Int64(clamping: first))
            statement.bind(2, Int64(clamping: last))
            try statement.execute()
        }
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws (or when
    /// the commit fails; SQLite may have rolled back already, e.g. on a full disk).
    func inTransaction(_ body: () throws -> Void) throws {
        try begin.execute()
        do {
            try body()
            try commit.execute()
        } catch {
            if sqlite3_get_autocommit(connection) == 0 { try? rollback.execute() }
            throw error
        }
    }
}

/// One prepared statement used through SQLite's C API (see ``CommitStatements``): bind, then
/// ``execute()``, which steps it to the end, resets it and clears its bindings.
final class RawStatement {
    private let connection: SQLiteConnection
    private let handle: SQLiteStatement

    init(_ sql: String, connection: SQLiteConnection) throws {
        self.connection = connection
        var handle: SQLiteStatement?
        let code = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard code == SQLITE_OK, let handle else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
        }
        self.handle = handle
    }

    deinit { sqlite3_finalize(handle) }

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    func bind(_ index: Int32, _ value: Int64?) { if let value { bind(index, value) } else { sqlite3_bind_null(handle, index) } }
    func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(handle, index, value) }
    func bind(_ index: Int32, _ value: Double?) { if let value { bind(index, value) } else { sqlite3_bind_null(handle, index) } }
    /// Binds a copy of `value` (SQLite's `SQLITE_TRANSIENT`).
    func bind(_ index: Int32, _ value: String) { sqlite3_bind_text(handle, index, value, -1, SQLITE_TRANSIENT) }

    /// Binds `bytes` as a blob (empty: a zero-length blob, never NULL), copied by SQLite.
    func bind(_ index: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            if let base = buffer.baseAddress, !buffer.isEmpty {
                sqlite3_bind_blob(handle, index, base, Int32(buffer.count), SQLITE_TRANSIENT)
            } else {
                sqlite3_bind_zeroblob(handle, index, 0)
            }
        }
    }

    /// Binds `bytes` as the blob `index` without copying them and runs the statement (the bytes are
    /// only read while it runs).
    func execute(blob bytes: [UInt8], at index: Int32) throws {
        try bytes.withUnsafeBytes { buffer in
            if let base = buffer.baseAddress, !buffer.isEmpty {
                sqlite3_bind_blob(handle, index, base, Int32(buffer.count), nil)  // SQLITE_STATIC
            } else {
                sqlite3_bind_zeroblob(handle, index, 0)
            }
            try execute()
        }
    }

    /// Steps the statement to its end, then resets it and clears its bindings (also when it fails).
    func execute() throws {
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW { code = sqlite3_step(handle) }
        let message = code == SQLITE_DONE ? nil : String(cString: sqlite3_errmsg(connection))
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        guard code == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: String(cString: sqlite3_sql(handle)))
        }
    }
}

/// SQLite's `SQLITE_TRANSIENT`: SQLite copies what is bound.
private let SQLITE_TRANSIENT = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
