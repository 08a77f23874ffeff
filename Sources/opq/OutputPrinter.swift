import Foundation
import OPQClient
import OPQCore

/// Prints the commands' output of a job as it runs: `opq map` (always), `opq run` and
/// `opq submit --wait` (with `--output`). Each operation's stdout goes to standard output and its stderr
/// to standard error, complete and byte for byte, fetched from the coordinator's output spool one slice
/// (1 MiB) at a time, so memory stays bounded however much a command writes.
///
/// Modes, as GNU parallel's:
/// - ``Mode/group`` (parallel's default `--group`): an operation's output is printed when it finishes,
///   stdout then stderr, never mixed with another's.
/// - ``Mode/keepOrder`` (`-k`): grouped, and in input order (an operation waits for those before it).
/// - ``Mode/lineBuffer`` (`--line-buffer`): whole lines are passed on while the commands run, as the
///   coordinator pushes them (``received(_:)``: the watch asks for output); lines of different operations
///   interleave, a line is never split.
///
/// `--tag` puts the operation's item and a tab before every line; `opq run` puts a `--- name (op-N) ---`
/// header before each operation's output instead. Output that was not kept whole (over the spool's cap,
/// or expired) is said so on standard error.
final class OutputPrinter {
    enum Mode {
        case group
        case keepOrder
        case lineBuffer
    }

    /// Which operations' output to print (`--output`).
    enum Selection: String, CaseIterable {
        case all
        case failed
        case none
    }

    private struct Key: Hashable {
        var id: OperationID
        var stream: StandardStream
    }

    /// Where one stream of one operation got to.
    private struct Cursor {
        var offset: UInt64 = 0
        var atLineStart = true
        var headed = false
        /// Line buffering: bytes after the last newline, not printed yet (at most ``maxPendingLine``).
        var pending: [UInt8] = []
    }

    private let connection: CoordinatorClient
    private let mode: Mode
    private let selection: Selection
    /// Operation ids in input order.
    private let order: [OperationID]
    /// `--tag`: the text before each line, by operation.
    private let tags: [OperationID: String]?
    /// `opq run`: the label of each operation's header.
    private let headers: [OperationID: String]?
    private let stdoutFD: Int32
    private let stderrFD: Int32
    private var cursors: [Key: Cursor] = [:]
    private var done: Set<OperationID> = []
    /// Operations seen finished, with their outcome (nil = finished as far as the job's end tells).
    private var outcomes: [OperationID: Outcome?] = [:]
    /// Streams a finish said were empty (``RemoteEvent/StateChange/stdoutBytes``): nothing to fetch, so
    /// `opq map` over commands that print nothing asks the coordinator for no output at all.
    private var empty: Set<Key> = []
    private var nextInOrder = 0
    private var failure: ClientError?

    /// A line longer than this is passed on in pieces (line buffering).
    static let maxPendingLine = 1 << 20

    /// - Parameters:
    ///   - order: the job's operation ids in input order.
    ///   - stdoutFD: where operations' stdout goes (``takeStandardOutput()`` when the job's own messages
    ///     must leave standard output).
    init(connection: CoordinatorClient, mode: Mode, selection: Selection = .all, order: [OperationID],
         tags: [OperationID: String]? = nil, headers: [OperationID: String]? = nil, stdoutFD: Int32 = STDOUT_FILENO) {
        self.connection = connection
        self.mode = mode
        self.selection = selection
        self.order = order
        self.tags = tags
        self.headers = headers
        self.stdoutFD = stdoutFD
        self.stderrFD = STDERR_FILENO
    }

    /// Gives standard output to the commands alone: returns a descriptor on the original standard output
    /// and points descriptor 1 at standard error, so progress lines and the summary (everything `print`
    /// writes) go to standard error, as GNU parallel keeps its own messages off standard output.
    static func takeStandardOutput() -> Int32 {
        fflush(nil)
        let original = dup(STDOUT_FILENO)
        guard original >= 0 else { return STDOUT_FILENO }
        dup2(STDERR_FILENO, STDOUT_FILENO)
        return original
    }

    /// A start or finish of an operation of the job (``JobProgress/onEvent``).
    func changed(_ change: RemoteEvent.StateChange) {
        let id = change.operation
        switch change.state {
        case .finished where outcomes[id] == nil:
            outcomes[id] = .some(change.outcome)
            if change.stdoutBytes == 0 { empty.insert(Key(id: id, stream: .standardOutput)) }
            if change.stderrBytes == 0 { empty.insert(Key(id: id, stream: .standardError)) }
            switch mode {
            case .group, .lineBuffer: emit(id)
            case .keepOrder: emitInOrder()
            }
        default:
            break
        }
    }

    /// Whether the watch must ask for running output (line buffering).
    var wantsRunningOutput: Bool { mode == .lineBuffer }

    /// A piece of running output pushed by the coordinator (line buffering): passes its whole lines on.
    /// Bytes already printed are skipped; a gap (pieces the coordinator skipped for a slow client) is
    /// read from the spool first.
    func received(_ piece: OutputPiece) {
        guard mode == .lineBuffer, !done.contains(piece.operation) else { return }
        let key = Key(id: piece.operation, stream: piece.stream)
        if piece.offset > cursors[key]?.offset ?? 0 { pump(key, final: false) }
        var cursor = cursors[key] ?? Cursor()
        let end = piece.offset + UInt64(piece.bytes.count)
        guard failure == nil, cursor.offset >= piece.offset, end > cursor.offset else { return }
        deliver(Array(piece.bytes[Int(cursor.offset - piece.offset)...]), key, &cursor)
        cursor.offset = end
        cursors[key] = cursor
    }

    /// The job finished: prints what was not printed yet, in input order.
    func finish() {
        for id in order where !done.contains(id) {
            if outcomes[id] == nil { outcomes[id] = .some(nil) }
            emit(id)
        }
        fflush(nil)
    }

    private func emitInOrder() {
        while nextInOrder < order.count, outcomes[order[nextInOrder]] != nil {
            emit(order[nextInOrder])
            nextInOrder += 1
        }
    }

    /// Prints the rest of an operation's output (all of it unless line buffering printed some).
    private func emit(_ id: OperationID) {
        guard done.insert(id).inserted else { return }
        if selection == .none || (selection == .failed && outcomes[id] == .some(.succeeded)) { return }
        pump(Key(id: id, stream: .standardOutput), final: true)
        pump(Key(id: id, stream: .standardError), final: true)
    }

    /// Copies what the coordinator holds of one stream from the cursor on; `final` also flushes a pending
    /// partial line and says when the output was not kept whole.
    private func pump(_ key: Key, final: Bool) {
        guard failure == nil else { return }
        if final, empty.remove(key) != nil, cursors[key]?.pending.isEmpty ?? true {
            cursors[key] = nil
            return
        }
        var cursor = cursors[key] ?? Cursor()
        do {
            let copy = try connection.copyOutput(key.id, key.stream, from: cursor.offset) { bytes in
                deliver(bytes, key, &cursor)
            }
            cursor.offset = copy.offset
            if final {
                if !cursor.pending.isEmpty {
                    let rest = cursor.pending
                    cursor.pending = []
                    write(rest, key, &cursor)
                }
                if copy.expired && cursor.offset == 0 {
                    try printTail(key, &cursor)
                } else if copy.isCut {
                    note("\(streamName(key)) of \(label(key.id)) was cut: the coordinator kept its first \(copy.spooled) of \(copy.total) bytes (see opq logs)")
                }
                if headers != nil && !cursor.atLineStart { put([10], fd(key)) }
            }
        } catch {
            failure = error
            note("cannot fetch the output of \(label(key.id)): \(error)")
        }
        cursors[key] = final ? nil : cursor
    }

    /// Nothing is spooled (no output, or dropped): prints the tail the coordinator kept, if any.
    private func printTail(_ key: Key, _ cursor: inout Cursor) throws(ClientError) {
        guard let tail = try connection.operation(key.id, includeOutput: true).tail(key.stream) else { return }
        let bytes = tail.bytes
        if tail.isTruncated {
            note("\(streamName(key)) of \(label(key.id)) is no longer kept whole: only its last \(bytes.count) of \(tail.totalBytes) bytes")
        }
        if !bytes.isEmpty { write(bytes, key, &cursor) }
    }

    private func deliver(_ bytes: [UInt8], _ key: Key, _ cursor: inout Cursor) {
        guard mode == .lineBuffer else { return write(bytes, key, &cursor) }
        cursor.pending.append(contentsOf: bytes)
        if let last = cursor.pending.lastIndex(of: 10) {
            let lines = Array(cursor.pending[...last])
            cursor.pending.removeFirst(last + 1)
            write(lines, key, &cursor)
        }
        if cursor.pending.count > Self.maxPendingLine {
            let piece = cursor.pending
            cursor.pending = []
            write(piece, key, &cursor)
        }
    }

    /// Writes bytes of one stream, with the header or the tags.
    private func write(_ bytes: [UInt8], _ key: Key, _ cursor: inout Cursor) {
        guard !bytes.isEmpty else { return }
        let fd = fd(key)
        if let headers, !cursor.headed {
            cursor.headed = true
            let op = "op-\(key.id.rawValue)"
            let name = headers[key.id].map { $0.isEmpty ? op : "\($0) (\(op))" } ?? op
            put(Array("--- \(name)\(key.stream == .standardError ? " stderr" : "") ---\n".utf8), fd)
        }
        guard let tag = tags?[key.id] else {
            put(bytes, fd)
            cursor.atLineStart = bytes.last == 10
            return
        }
        let prefix = Array((tag + "\t").utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + prefix.count * 4)
        for byte in bytes {
            if cursor.atLineStart { out.append(contentsOf: prefix) }
            out.append(byte)
            cursor.atLineStart = byte == 10
        }
        put(out, fd)
    }

    private func fd(_ key: Key) -> Int32 { key.stream == .standardOutput ? stdoutFD : stderrFD }

    private func streamName(_ key: Key) -> String { key.stream.description }

    private func label(_ id: OperationID) -> String {
        if let name = headers?[id], !name.isEmpty { return "\(name) (op-\(id.rawValue))" }
        if let tag = tags?[id] { return "\(tag) (op-\(id.rawValue))" }
        return "op-\(id.rawValue)"
    }

    private func note(_ text: String) {
        fflush(nil)
        put(Array("opq: \(text)\n".utf8), STDERR_FILENO)
    }

    /// Writes everything to `fd` (retrying short writes and EINTR).
    private func put(_ bytes: [UInt8], _ fd: Int32) {
        if fd == STDOUT_FILENO || fd == STDERR_FILENO { fflush(nil) }
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + done, $0.count - done) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            done += written
        }
    }
}
