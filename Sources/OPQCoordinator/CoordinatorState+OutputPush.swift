import OPQCore
import OPQWire

/// Running output pushed to the clients watching it (`Watch.include_output`, `opq map --line-buffer`).
extension CoordinatorState {
    /// Sends `bytes` of `chunk` (a worker's stream, already handed to the spool) at once to every watcher
    /// that asked for output and covers its operation.
    ///
    /// Best effort, never queued behind other messages: a client with messages waiting in
    /// ``clientBacklog`` skips the piece (at most one piece waits for a slow client). The client sees the
    /// gap in the next piece's offset, or at the finish, and reads the missing bytes from the spool.
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
        for watcher in watchers.values where watcher.includesOutput && !clientBacklog.hasWaiting(watcher.identity) {
            guard watcher.covers(job: job, queue: { core.queueName(of: id) }) else { continue }
            push.watch = watcher.watch
            var message = Opq_V1_CoordinatorToClient()
            message.output = push
            if let frames = frame(message, raw: [bytes], identity: watcher.identity) { actions.append(.notice(frames)) }
        }
    }
}
