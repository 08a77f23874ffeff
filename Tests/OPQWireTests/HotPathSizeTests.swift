import OPQCore
import Testing
import OPQWire

/// The hot-path messages (one dispatch, a finish with its output tail, a started report, a batch of
/// dispatches) survive the full framing unchanged and stay small: every byte of them is paid per command.
/// Their time is measured by `opq-bench wire`, not here.
@Suite struct HotPathSizeTests {
    /// The bytes of all frames of `message`, after checking it decodes to itself.
    static func frameBytes<M: WireEnvelope>(_ message: M, raw: [[UInt8]] = []) throws -> Int {
        let back = try roundTrip(message, raw: raw)
        #expect(back.message.isEqualTo(message: message))
        #expect(back.raw == raw)
        return try Frames.encode(message, raw: raw).reduce(0) { $0 + $1.count }
    }

    @Test func oneCommandDispatchIsSmallAndRoundTrips() throws {
        let bytes = try Self.frameBytes(Opq_V1_CoordinatorToWorker.orders([.dispatch(Samples.dispatch)]))
        // argv (3 words), environment (1 pair), working directory, name, queue, ids, QoS, deadlines.
        #expect(bytes < 128, "a one-command dispatch takes \(bytes) bytes")
        var plain = Samples.dispatch
        plain.work.command.environment = [:]
        let withoutEnvironment = try Self.frameBytes(Opq_V1_CoordinatorToWorker.orders([.dispatch(plain)]))
        #expect(withoutEnvironment < bytes)
    }

    @Test func finishedWithTailAndStartedAreSmallAndRoundTrip() throws {
        var raw: [[UInt8]] = []
        var finished = Samples.finished
        finished.attachOutput(stdout: Array("all good\n".utf8), stderr: [], to: &raw)
        #expect(raw == [Array("all good\n".utf8)], "the tail travels as a raw frame, not inside the protobuf")
        let finishedBytes = try Self.frameBytes(Opq_V1_WorkerMessage.reports([.finished(finished)]), raw: raw)
        #expect(finishedBytes < 64 + raw[0].count, "a finished report takes \(finishedBytes) bytes")
        let startedBytes = try Self.frameBytes(Opq_V1_WorkerMessage.reports([.started(OperationID(42), attempt: 1)]))
        #expect(startedBytes < 32, "a started report takes \(startedBytes) bytes")
    }

    @Test func batchedDispatchesCostNoMoreThanSeparateOnes() throws {
        let one = try Self.frameBytes(Opq_V1_CoordinatorToWorker.orders([.dispatch(Samples.dispatch)]))
        let batch = (1...64).map { k in Opq_V1_Order.dispatch(.with { $0 = Samples.dispatch; $0.operation = UInt64(k) }) }
        let batched = try Self.frameBytes(Opq_V1_CoordinatorToWorker.orders(batch))
        #expect(batched <= 64 * one, "64 dispatches in one message take \(batched) bytes, 64 single ones \(64 * one)")
    }
}
