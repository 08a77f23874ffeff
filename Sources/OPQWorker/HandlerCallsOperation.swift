import Foundation
import OPQCore

/// Runs an operation made of several handler calls (``OPQCore/Work/handlers(_:)``: a remote
/// `BlockOperation`'s execution blocks) as one attempt.
///
/// - Every call runs at once: each block is the operation its handler's factory made (a
///   ``HandlerOperation`` runs on a thread of its own), started when this attempt starts.
/// - The attempt finishes when every block has; it succeeds only if all succeed. The first block to
///   fail decides the report: reason `error`, with a message naming the block (`block 2 of 3 (handler
///   'resize') failed: …`); the other blocks still run to their end, as commands do.
/// - A cancel, a timeout or a hand back reaches every block; the attempt then reports `cancelled`
///   (`failed`/`timeout` for a timeout) once all have returned.
/// - Its result is the blocks' results in order, as ``OPQCore/HandlerCall/combinedResult(_:)``: at most
///   `Limits.maxResultBytes` in all.
/// - Progress is the mean of the blocks' latest fractions; a block's message is prefixed `block K:`.
// @unchecked Sendable: restated as every `Operation` subclass must. `results`, `fractions`, `failureOrder` and
// `remaining` are guarded by `lock`; `calls`, `blocks` and `operationName` are immutable.
final class HandlerCallsOperation: AttemptOperation, @unchecked Sendable {
    private let calls: [HandlerCall]
    private let blocks: [AttemptOperation]
    private let operationName: String
    private let lock = NSLock()
    private var results: [AttemptResult?]
    private var fractions: [Double]
    private var failureOrder: [Int] = []
    private var remaining: Int

    /// Creates the attempt `key` of operation `operationName` running `blocks`, made for `calls` (same order).
    init(key: AttemptKey, operationName: String, calls: [HandlerCall], blocks: [AttemptOperation]) {
        precondition(calls.count == blocks.count, "one block per handler call")
        self.calls = calls
        self.blocks = blocks
        self.operationName = operationName
        results = Array(repeating: nil, count: blocks.count)
        fractions = Array(repeating: 0, count: blocks.count)
        remaining = blocks.count
        super.init(key: key)
        // Before anything can stop this attempt: a block stopped while waiting reports at once.
        for (index, block) in blocks.enumerated() {
            block.sink = { [self] event in receive(event, from: index) }
        }
    }

    override func begin() {
        guard !blocks.isEmpty else { return finish(AttemptResult(.succeeded, result: HandlerCall.combinedResult([]))) }
        for block in blocks {
            // Handler operations and adapters start their work on threads of their own and return at once;
            // any other operation a factory made might block in `begin()`: give it a thread.
            if block is HandlerOperation || block is ForeignOperationAdapter || block is FailedOperation {
                block.start()
            } else {
                let thread = Thread { block.start() }
                thread.name = "opq-handler-block"
                thread.start()
            }
        }
    }

    override func stopRequested(_ cause: StopCause) {
        for block in blocks { block.stop(cause) }
    }

    private func receive(_ event: AttemptEvent, from index: Int) {
        switch event {
        case .finished(let completion):
            let result = AttemptResult(completion.report, stdout: completion.stdout, stderr: completion.stderr,
                                       result: completion.result, message: completion.message)
            let done: Bool = lock.withLock {
                guard results[index] == nil else { return false }
                results[index] = result
                if result.report.status != .succeeded { failureOrder.append(index) }
                remaining -= 1
                return remaining == 0
            }
            if done { finish(combined()) }
        case .progress(_, let fraction, let message):
            let mean: Double = lock.withLock {
                fractions[index] = fraction
                return fractions.reduce(0, +) / Double(fractions.count)
            }
            emitProgress(fraction: mean, message: message.map { "block \(index + 1): \($0)" })
        case .started, .output:
            break
        }
    }

    /// The attempt's result once every block has finished.
    private func combined() -> AttemptResult {
        var (results, firstFailure) = lock.withLock { (self.results.map { $0! }, failureOrder.first) }
        if let index = firstFailure, let message = results[index].message {
            // The failing block's own "opq-worker: MESSAGE" line: the attempt's message below repeats it.
            let line = Array("opq-worker: \(message)\n".utf8)
            if results[index].stderr.count >= line.count, Array(results[index].stderr.suffix(line.count)) == line {
                results[index].stderr.removeLast(line.count)
            }
        }
        let stdout = Array(results.flatMap(\.stdout).suffix(TailBuffer.defaultCapacity))
        let stderr = Array(results.flatMap(\.stderr).suffix(TailBuffer.defaultCapacity))
        if isCancelled { return AttemptResult(AttemptResult.cancelled.report, stdout: stdout, stderr: stderr, message: "cancelled") }
        if let index = firstFailure {
            let failed = results[index]
            let why = failed.message ?? "\(failed.report.status)"
            return .error("block \(index + 1) of \(blocks.count) (handler '\(calls[index].name)') failed: \(why)", stdout: stdout, stderr: stderr)
        }
        let result = HandlerCall.combinedResult(results.map(\.result))
        if result.count > Limits.maxResultBytes {
            let operation = operationName.isEmpty ? "\(key.operation)" : "\(key.operation) '\(operationName)'"
            return .error("the results of the \(blocks.count) blocks of \(operation) take \(result.count) bytes together "
                + "(a JSON array), over the limit of \(Limits.maxResultBytes) bytes (1 MiB): return less from each block "
                + "(e.g. write the data to files and return their paths)", stdout: stdout, stderr: stderr)
        }
        return AttemptResult(.succeeded, stdout: stdout, stderr: stderr, result: result)
    }
}
