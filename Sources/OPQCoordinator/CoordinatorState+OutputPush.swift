import OPQCore
import OPQWire

/// Running output pushed to the clients watching it (`Watch.include_output`, `opq map --line-buffer`).
extension CoordinatorState {
    /// Sends `bytes` of `chunk` (a worker's stream, already handed to the spool) at once to every watcher
    /// that asked for output and covers its operation.
    ///
    /// Never queued behind other messages: a client with messages waiting in ``clientBacklog`` gets,
    /// in order behind them, only where the stream has reached (an empty piece at the end offset: a few
    /// bytes, whatever the chunk's size). The client sees the gap and reads the missing bytes from the
    /// spool — at once, not only when a next piece comes (a command may print nothing more for hours).
    /// - Complexity: O(watchers).
    mutating func pushOutput(_ chunk: Opq_V1_OutputChunk, bytes: [UInt8]) {
        guard !bytes.isEmpty, watchers.values.contains(where: \.includesOutput) else { return }
        let id = OperationID(chunk.operation)
        let job = core.dispatchDetails(id)?.job ?? JobID(0)
        var push = Opq_V1_OutputPush()
        push.operation = chunk.operation
        push.attempt = chunk.attempt
        push.stream = chunk.stream
        push.offset = chunk.offset
        push.frame = 1
        for watcher in watchers.values where watcher.includesOutput {
            guard watcher.covers(job: job, queue: { core.queueName(of: id) }) else { continue }
            guard !clientBacklog.hasWaiting(watcher.identity) else {
                queueOutputReached(chunk.offset + UInt64(bytes.count), of: chunk, to: watcher)
                continue
            }
            push.watch = watcher.watch
            var message = Opq_V1_CoordinatorToClient()
            message.output = push
            if let frames = frame(message, raw: [bytes], identity: watcher.identity) { actions.append(.notice(frames)) }
        }
    }

    /// Remembers how far a running attempt's stream has come (every chunk, watched or not), so that a
    /// watch starting later learns of the output written before it (``announceRunningOutput(to:)``).
    /// Forgotten when the attempt's finish report comes. O(1).
    mutating func noteRunningOutput(_ chunk: Opq_V1_OutputChunk, count: Int) {
        guard count > 0 else { return }
        let id = OperationID(chunk.operation)
        var entry = runningOutput[id].flatMap { $0.attempt == chunk.attempt ? $0 : nil } ?? RunningOutput(attempt: chunk.attempt)
        entry.reached(chunk.offset + UInt64(count), stream: chunk.stream)
        runningOutput[id] = entry
    }

    /// A watch that asked for output starts: for each running operation it covers that already wrote
    /// something, queues (behind the snapshot) where each stream has reached, so the client reads what
    /// came before the watch from the spool at once. Without it, output written between a submission and
    /// its watch showed only when a next piece came or at the finish (`opq map --line-buffer` with a
    /// command that prints a line and then blocks printed nothing).
    /// - Complexity: O(operations running with output).
    mutating func announceRunningOutput(to watcher: Watcher) {
        var ended: [OperationID] = []
        for (id, entry) in runningOutput {
            guard let state = core.state(of: id), state == .dispatched || state == .executing else {
                ended.append(id)  // ended without a finish report (its worker was lost): nothing runs any more
                continue
            }
            let job = core.dispatchDetails(id)?.job ?? JobID(0)
            guard watcher.covers(job: job, queue: { core.queueName(of: id) }) else { continue }
            var chunk = Opq_V1_OutputChunk()
            chunk.operation = id.rawValue
            chunk.attempt = entry.attempt
            for (stream, end) in [(Opq_V1_OutputStream.stdout, entry.stdout), (.stderr, entry.stderr)] where end > 0 {
                chunk.stream = stream
                queueOutputReached(end, of: chunk, to: watcher)
            }
        }
        for id in ended { runningOutput[id] = nil }
    }

    /// Queues to `watcher`, in order behind what waits for its client, an empty piece of `chunk`'s stream at
    /// offset `end`: "this stream has reached `end`" (the client reads what it lacks from the spool).
    private mutating func queueOutputReached(_ end: UInt64, of chunk: Opq_V1_OutputChunk, to watcher: Watcher) {
        var message = Opq_V1_CoordinatorToClient()
        message.output.operation = chunk.operation
        message.output.attempt = chunk.attempt
        message.output.stream = chunk.stream
        message.output.offset = end
        message.output.frame = 1
        message.output.watch = watcher.watch
        queueToClient(message, raw: [[]], identity: watcher.identity)
    }
}

/// How far a running attempt's output streams have come, as far as its chunks told.
struct RunningOutput: Equatable {
    var attempt: UInt32
    var stdout: UInt64 = 0
    var stderr: UInt64 = 0

    mutating func reached(_ end: UInt64, stream: Opq_V1_OutputStream) {
        switch stream {
        case .stderr: stderr = max(stderr, end)
        default: stdout = max(stdout, end)
        }
    }
}
