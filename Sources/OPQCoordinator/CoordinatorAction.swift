import OPQCore
import OPQJournal
import OPQWire

/// What the coordinator's state machine (``CoordinatorState``) asks its socket loop to do. The loop
/// carries the actions out in order; the only answers it feeds back are the ones a socket or a disk
/// gives (a worker that cannot take a message, a client that cannot take one now or is gone, a journal
/// whose disk is full).
enum CoordinatorAction {
    /// Send a message to a registered worker on its session's connection (the loop stamps the session's
    /// durable-reports acknowledgement and lease echo as it sends). A worker that cannot take it is lost:
    /// the loop reports that with ``CoordinatorState/workerUnreachable(_:now:)``.
    case toWorker(WorkerID, Opq_V1_CoordinatorToWorker)
    /// Send orders (dispatches, kills) to a registered worker, in batches; not while the journal stalls.
    case orders(WorkerID, [Opq_V1_Order])
    /// Send a message to a worker connection that has no session (a refusal, a disconnect).
    case toConnection([UInt8], Opq_V1_CoordinatorToWorker)
    /// A reply to an applied request (framed): it acknowledges what the journal holds, so it waits for
    /// the commit before it.
    case reply([[UInt8]])
    /// A message to a client that acknowledges nothing durable (watch events, answers to waits): sent
    /// even while the journal stalls.
    case notice([[UInt8]])
    /// A refusal of a request that was not applied, sent at once (it may be dropped for a full client).
    case refusal([[UInt8]])
    /// Append a durable record to the turn's journal transaction.
    case journal(JournalEntry)
    /// Keep what a finish report said (exit status, output tails) in the journal with the finish.
    case journalOutput(OperationOutput, of: OperationID)
    /// Commit the turn's journal transaction; everything after it may depend on it.
    case commit
    /// Write a chunk of a command's output to the output spool.
    case spoolOutput(Opq_V1_OutputChunk, bytes: [UInt8])
    /// An attempt's output is complete (the totals of stdout and stderr).
    case spoolFinished(OperationID, attempt: UInt32, totals: [UInt64])
    /// Answer a `ReadOutput` request from the output spool.
    case readOutput(Opq_V1_ReadOutput, requestID: UInt64, identity: [UInt8])
    /// Carry out `opq prune` (it changes the journal's file, which only the loop holds).
    case prune(Opq_V1_Prune, requestID: UInt64, identity: [UInt8])
    /// Wake the loop at this time at the latest (the next deadline: the core's, a heartbeat, a wait's timeout).
    case wakeAt(Double)
}
