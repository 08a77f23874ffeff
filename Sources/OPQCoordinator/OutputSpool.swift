#if canImport(Glibc)
import Glibc
#endif
import DequeModule
import Foundation
import OPQCore
import OPQWire

/// Every byte of commands' output, spooled to files as the workers stream it (SEMANTICS §11), read back
/// by clients in slices (`ReadOutput`).
///
/// Flow: a worker streams each pipe read as an `OutputChunk` (at most 64 KiB) within a window of
/// unacknowledged bytes (``OPQWorker/OutputWindow``, 8 MiB); the coordinator writes it at its offset in
/// `op-N.stdout` / `op-N.stderr` under ``directory`` and acknowledges it with the next message to the
/// worker. A client reads slices of at most 16 MiB (1 MiB by default) and asks again from where it got
/// to. So memory stays bounded in the worker (window), the coordinator (one chunk or slice at a time) and
/// the client (one slice), however much a command writes.
///
/// Retention, documented for users in the README:
/// - Only the last attempt's output is kept: a chunk of a newer attempt starts the files again.
/// - Each stream keeps its first ``capPerStream`` bytes; beyond that it is cut (the total is still
///   counted, and the worker's `Finished` still carries the last 64 KiB as the tail): a slice says so.
/// - All files together stay within ``budget``: the oldest finished operations' files are dropped first
///   (they then read as `expired`, with only their tail left). Operations still running are never dropped.
/// - A pruned operation's files go with it. The spool does not survive a coordinator restart: the
///   directory is emptied when the coordinator starts (the journaled tails remain).
///
/// Files are opened per chunk and per slice (no descriptor is held between turns), on the loop thread.
final class OutputSpool {
    /// What is spooled for one operation.
    struct Entry {
        /// The attempt whose output this is.
        var attempt: UInt32
        /// Bytes written to each file (stdout, stderr).
        var spooled: [UInt64] = [0, 0]
        /// Bytes each stream produced, as far as known (more than `spooled` = cut).
        var total: [UInt64] = [0, 0]
        /// The attempt finished: the totals are final.
        var complete = false
    }

    /// Where the files are.
    let directory: String
    /// Bytes kept per stream of one operation.
    let capPerStream: UInt64
    /// Bytes kept over all operations.
    let budget: UInt64
    /// Remove the directory when the coordinator stops (a private temporary one).
    private let isTemporary: Bool
    private var entries: [OperationID: Entry] = [:]
    /// Finished operations with files, oldest finish first (the budget drops from the front).
    private var finishedOrder = Deque<OperationID>()
    /// Bytes in all files.
    private(set) var bytes: UInt64 = 0
    /// The last write error not yet taken by ``takeError()``.
    private var lastError: String?

    /// The last write error since the previous call (for the log), or nil.
    func takeError() -> String? {
        defer { lastError = nil }
        return lastError
    }

    /// A spool in `directory` (emptied first), or in a new private temporary directory when nil.
    init(directory: String?, capPerStream: UInt64, budget: UInt64) throws {
        let path: String
        if let directory {
            path = directory
            try? FileManager.default.removeItem(atPath: path)
            isTemporary = false
        } else {
            var template = Array((NSTemporaryDirectory() + "/opq-output-XXXXXX").utf8CString)
            guard let made = mkdtemp(&template) else {
                throw ConfigurationError(description: "cannot make a temporary directory for command output: \(String(cString: strerror(errno)))")
            }
            path = String(cString: made)
            isTemporary = true
        }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        self.directory = path
        self.capPerStream = capPerStream
        self.budget = budget
    }

    /// Removes a temporary directory.
    func close() {
        if isTemporary { try? FileManager.default.removeItem(atPath: directory) }
    }

    subscript(id: OperationID) -> Entry? { entries[id] }

    private static func index(_ stream: Opq_V1_OutputStream) -> Int { stream == .stderr ? 1 : 0 }

    func path(_ id: OperationID, _ stream: Int) -> String {
        "\(directory)/op-\(id.rawValue).\(stream == 0 ? "stdout" : "stderr")"
    }

    /// Writes one chunk (of an attempt the caller checked the worker holds). A chunk of an older
    /// attempt is ignored; of a newer one, it replaces what was kept.
    func write(_ chunk: Opq_V1_OutputChunk, bytes chunkBytes: [UInt8]) {
        let id = OperationID(chunk.operation)
        if let entry = entries[id], entry.attempt > chunk.attempt { return }
        if let entry = entries[id], entry.attempt < chunk.attempt { remove(id) }
        var entry = entries[id] ?? Entry(attempt: chunk.attempt)
        let k = Self.index(chunk.stream)
        let end = chunk.offset + UInt64(chunkBytes.count)
        entry.total[k] = max(entry.total[k], end)
        // Only the part below the cap, and only what is not there yet (a chunk sent again after a reconnect).
        let keepEnd = min(end, capPerStream)
        if keepEnd > entry.spooled[k], chunk.offset <= entry.spooled[k] {
            let from = Int(entry.spooled[k] - chunk.offset)
            let count = Int(keepEnd - entry.spooled[k])
            if writeAll(path(id, k), chunkBytes[from ..< from + count], at: entry.spooled[k]) {
                entry.spooled[k] += UInt64(count)
                bytes += UInt64(count)
            }
        }
        entries[id] = entry
    }

    /// The attempt `attempt` of `id` finished with these stream totals: its entry is final.
    func finished(_ id: OperationID, attempt: UInt32, totals: [UInt64]) {
        guard var entry = entries[id], entry.attempt == attempt, !entry.complete else { return }
        entry.complete = true
        for k in 0..<2 { entry.total[k] = max(entry.total[k], totals[k]) }
        entries[id] = entry
        finishedOrder.append(id)
        while bytes > budget, let oldest = finishedOrder.first {
            finishedOrder.removeFirst()
            remove(oldest)
        }
    }

    /// Drops what is kept for `id` (pruned, or over the budget).
    func remove(_ id: OperationID) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        bytes -= entry.spooled[0] + entry.spooled[1]
        for k in 0..<2 { unlink(path(id, k)) }
    }

    /// Up to `maxBytes` of `stream` of `id` from `offset`: the slice (without bytes) and the bytes.
    func read(_ id: OperationID, _ stream: Opq_V1_OutputStream, offset: UInt64, maxBytes: UInt32) -> (Opq_V1_OutputSlice, [UInt8]) {
        var slice = Opq_V1_OutputSlice()
        slice.offset = offset
        guard let entry = entries[id] else {
            slice.expired = true
            return (slice, [])
        }
        let k = Self.index(stream)
        slice.attempt = entry.attempt
        slice.spooledBytes = entry.spooled[k]
        slice.totalBytes = entry.total[k]
        slice.complete = entry.complete
        guard offset < entry.spooled[k] else { return (slice, []) }
        let limit = maxBytes == 0 ? Opq_V1_ReadOutput.defaultSliceBytes : min(maxBytes, Opq_V1_ReadOutput.maxSliceBytes)
        let count = Int(min(UInt64(limit), entry.spooled[k] - offset))
        return (slice, readAll(path(id, k), count: count, at: offset))
    }

    private func writeAll(_ path: String, _ data: ArraySlice<UInt8>, at offset: UInt64) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            lastError = "cannot open \(path): \(String(cString: strerror(errno)))"
            return false
        }
        defer { Glibc.close(fd) }
        var done = 0
        while done < data.count {
            let written = data.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(offset) + off_t(done)) }
            if written < 0 {
                if errno == EINTR { continue }
                lastError = "cannot write \(path): \(String(cString: strerror(errno)))"
                return false
            }
            done += written
        }
        return true
    }

    private func readAll(_ path: String, count: Int, at offset: UInt64) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { break }
            done += got
        }
        return done == count ? buffer : Array(buffer[..<done])
    }
}
