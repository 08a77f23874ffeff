import OPQCore
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import OPQWire

/// Encode + decode (with validation) cost of the hot-path messages. Printed, not asserted: a debug
/// build is several times slower than release (`swift test -c release` for real numbers).
@Suite struct CostTests {
    static func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    static func format(_ micros: Double) -> String { String(format: "%.2f", micros) }

    static func measure<M: WireEnvelope>(_ label: String, _ message: M, raw: [[UInt8]] = [], count: Int = 20_000) throws {
        var frameBytes = 0
        for _ in 0..<1_000 { _ = try Frames.decode(try Frames.encode(message, raw: raw), as: M.self) }  // warm up
        let start = seconds()
        for _ in 0..<count {
            let frames = try Frames.encode(message, raw: raw)
            frameBytes = frames[1].count
            _ = try Frames.decode(frames, as: M.self)
        }
        let micros = (seconds() - start) / Double(count) * 1e6
        // The parts: protobuf encode, protobuf decode, validation.
        let body = try Frames.encode(message, raw: raw)[1]
        var t = seconds()
        for _ in 0..<count { _ = try message.serializedBytes() as [UInt8] }
        let encode = (seconds() - t) / Double(count) * 1e6
        t = seconds()
        for _ in 0..<count { _ = try M(serializedBytes: body) }
        let decode = (seconds() - t) / Double(count) * 1e6
        t = seconds()
        for _ in 0..<count { try message.validate(rawFrames: raw.count) }
        let validate = (seconds() - t) / Double(count) * 1e6
        print("wire cost: \(label): \(format(micros)) µs/message encode+decode (\(frameBytes)-byte protobuf frame; "
              + "protobuf encode \(format(encode)), protobuf decode \(format(decode)), validate \(format(validate)) µs)")
    }

    @Test func encodeAndDecodeCostOfDispatchAndFinished() throws {
        try Self.measure("Dispatch (1 command)", Opq_V1_CoordinatorToWorker.orders([.dispatch(Samples.dispatch)]))
        var plain = Samples.dispatch
        plain.work.command.environment = [:]
        try Self.measure("Dispatch (1 command, no environment map)", Opq_V1_CoordinatorToWorker.orders([.dispatch(plain)]))
        var raw: [[UInt8]] = []
        var finished = Samples.finished
        finished.attachOutput(stdout: Array("all good\n".utf8), stderr: [], to: &raw)
        try Self.measure("Finished (stdout tail frame)", Opq_V1_WorkerMessage.reports([.finished(finished)]), raw: raw)
        try Self.measure("Started", Opq_V1_WorkerMessage.reports([.started(OperationID(42), attempt: 1)]))
        let batch = (1...64).map { k in Opq_V1_Order.dispatch(.with { $0 = Samples.dispatch; $0.operation = UInt64(k) }) }
        try Self.measure("64 Dispatches in one message (per message)", Opq_V1_CoordinatorToWorker.orders(batch), count: 1_000)
    }
}
