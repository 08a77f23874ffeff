import Foundation
import OPQCore
import OPQWire
import SwiftProtobuf
import Testing

/// The hand-written codec of the per-command messages (`WorkerMessage` with Reports, `CoordinatorToWorker`
/// with Orders) against SwiftProtobuf, its reference: the same bytes out, the same value or `WireError` in,
/// for seeded random messages, their extremes, and bytes a peer may reorder, extend, repeat or break.
/// Its speed is measured by `opq-bench wire`, not here.
@Suite struct HandCodecTests {
    /// What a decode gave: the message or the error.
    enum Outcome<M: WireEnvelope>: CustomStringConvertible {
        case message(M)
        case error(WireError)

        init(_ body: () throws(WireError) -> M) {
            do throws(WireError) { self = .message(try body()) } catch { self = .error(error) }
        }

        /// Equal values (NaN-holding ones compared as text) or equal errors.
        func same(as other: Self) -> Bool {
            switch (self, other) {
            case let (.message(a), .message(b)): HandCodecTests.same(a, b)
            case let (.error(a), .error(b)): a == b
            default: false
            }
        }

        var description: String {
            switch self {
            case .message(let message): "message \(message.textFormatString())"
            case .error(let error): "error \(error)"
            }
        }
    }

    static func same<M: SwiftProtobuf.Message>(_ a: M, _ b: M) -> Bool {
        a.isEqualTo(message: b) || a.textFormatString() == b.textFormatString()
    }

    /// Checks `message` both ways: hand-encoded bytes are SwiftProtobuf's, and they read back by hand.
    static func checkBothWays<M: WireEnvelope>(_ message: M, handEncoded: (M) -> [UInt8]?, handDecoded: ([UInt8]) -> M?,
                                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reference: [UInt8] = try message.serializedBytes()
        guard let bytes = handEncoded(message) else {
            Issue.record("not encoded by hand: \(message.textFormatString())", sourceLocation: sourceLocation)
            return
        }
        #expect(bytes == reference, "hand-encoded bytes differ for \(message.textFormatString())", sourceLocation: sourceLocation)
        #expect(try message.encodedBytes() == reference, sourceLocation: sourceLocation)
        guard let back = handDecoded(reference) else {
            Issue.record("not decoded by hand: \(message.textFormatString())", sourceLocation: sourceLocation)
            return
        }
        #expect(same(back, message), "decoded \(back.textFormatString()), sent \(message.textFormatString())", sourceLocation: sourceLocation)
    }

    @Test func randomReportsAreWrittenAndReadAsSwiftProtobufDoes() throws {
        var messages = RandomMessages(seed: 19)
        for _ in 0..<3_000 {
            try Self.checkBothWays(messages.workerMessage(), handEncoded: { $0.handEncoded() }, handDecoded: Opq_V1_WorkerMessage.handDecoded)
        }
    }

    @Test func randomOrdersAreWrittenAndReadAsSwiftProtobufDoes() throws {
        var messages = RandomMessages(seed: 20)
        for _ in 0..<3_000 {
            try Self.checkBothWays(messages.coordinatorToWorker(), handEncoded: { $0.handEncoded() },
                                   handDecoded: Opq_V1_CoordinatorToWorker.handDecoded)
        }
    }

    @Test func extremesAreWrittenAndReadByteForByte() throws {
        let huge = String(repeating: "日本", count: 10_000)  // 60,000 bytes: a 3-byte length
        let finished = Opq_V1_Finished.with {
            $0.operation = .max; $0.attempt = .max; $0.status = .UNRECOGNIZED(-1); $0.reason = .upToDate
            $0.exitCode = .min; $0.signal = 0; $0.durationSeconds = -0.0; $0.errorMessage = huge
            $0.stdout = Opq_V1_OutputTail(); $0.result = .with { $0.frame = .max; $0.totalBytes = .max }
        }
        try Self.checkBothWays(Opq_V1_WorkerMessage.with {
            $0.reports = .with { $0.items = [.finished(finished), Opq_V1_Report(), .started(OperationID(0), attempt: 0)]; $0.sequence = .max }
            $0.leaseRequest = .max
        }, handEncoded: { $0.handEncoded() }, handDecoded: Opq_V1_WorkerMessage.handDecoded)
        var dispatch = Samples.dispatch
        dispatch.name = huge
        dispatch.work.command.environment = ["": "", "ключ": huge, "🙂": "\u{0}"]
        dispatch.work.command.argv = ["", huge, "é"]
        dispatch.timeoutSeconds = 0
        dispatch.killGraceSeconds = .infinity
        dispatch.dependencies = [.with { $0.operation = .max; $0.outcome = .UNRECOGNIZED(Int(Int32.min)); $0.result = Data(count: 70_000); $0.resultOmitted = true }]
        try Self.checkBothWays(Opq_V1_CoordinatorToWorker.with {
            $0.orders = .with { $0.items = [.dispatch(dispatch), Opq_V1_Order(), .kill(Opq_V1_Kill(OperationID(1), attempt: 1, reason: .stale, grace: -0.0))] }
            $0.reportsDurable = .max; $0.leaseEcho = 1
        }, handEncoded: { $0.handEncoded() }, handDecoded: Opq_V1_CoordinatorToWorker.handDecoded)
        try Self.checkBothWays(Opq_V1_WorkerMessage(), handEncoded: { $0.handEncoded() }, handDecoded: Opq_V1_WorkerMessage.handDecoded)
        try Self.checkBothWays(Opq_V1_CoordinatorToWorker.heartbeat, handEncoded: { $0.handEncoded() },
                               handDecoded: Opq_V1_CoordinatorToWorker.handDecoded)
    }

    @Test func aMissingOneofIsRefusedAsBeforeNamingIt() throws {
        let reports = Opq_V1_WorkerMessage.reports([.started(OperationID(1), attempt: 1), Opq_V1_Report()])
        let bytes: [UInt8] = try reports.serializedBytes()
        #expect(Opq_V1_WorkerMessage.handDecoded(bytes) != nil, "read by hand, then validated")
        #expect(wireError { () throws(WireError) in _ = try Opq_V1_WorkerMessage.decoded(bytes, rawFrames: 0) }
            == .missingField("WorkerMessage.reports.items[1].kind"))
        let orders: [UInt8] = try Opq_V1_CoordinatorToWorker.orders([Opq_V1_Order()]).serializedBytes()
        #expect(wireError { () throws(WireError) in _ = try Opq_V1_CoordinatorToWorker.decoded(orders, rawFrames: 0) }
            == .missingField("CoordinatorToWorker.orders.items[0].kind"))
    }

    @Test func unknownFieldsAreLeftToSwiftProtobufAndKept() throws {
        var bytes: [UInt8] = try Opq_V1_CoordinatorToWorker.orders([.dispatch(Samples.dispatch)]).serializedBytes()
        bytes += [0xA0, 0x06, 0x2A]  // field 100, varint 42
        #expect(Opq_V1_CoordinatorToWorker.handDecoded(bytes) == nil)
        let message = try Opq_V1_CoordinatorToWorker.decoded(bytes, rawFrames: 0)
        #expect(message == (try Opq_V1_CoordinatorToWorker(serializedBytes: bytes)))
        #expect(try message.encodedBytes() == bytes, "the unknown field is written back where SwiftProtobuf writes it")
        #expect(message.handEncoded() == bytes)
    }

    @Test func repeatedFieldsDecodeAsProtobufMergesThem() throws {
        // The last scalar wins; a repeated message field or oneof case merges into the first; repeated
        // fields may come split and interleaved.
        func field(_ number: UInt64, _ body: [UInt8]) -> [UInt8] { WireMutations.varint(number << 3 | 2) + WireMutations.varint(UInt64(body.count)) + body }
        let tailA: [UInt8] = [0x08, 0x01, 0x10, 0x05]  // frame 1, total 5
        let tailB: [UInt8] = [0x10, 0x07]              // total 7
        let finished: [UInt8] = [0x08, 0x2A, 0x10, 0x01, 0x18, 0x01, 0x08, 0x2B] + field(8, tailA) + field(8, tailB)
        let reports = field(3, field(1, field(2, finished)) + [0x10, 0x04] + field(1, field(1, [0x08, 0x01, 0x10, 0x01])) + [0x10, 0x05])
        for bytes in [reports, reports + field(3, field(1, field(1, [0x08, 0x02, 0x10, 0x01])))] {
            let decoded = try Opq_V1_WorkerMessage.decoded(bytes, rawFrames: 1)
            #expect(decoded == (try Opq_V1_WorkerMessage.decodedBySwiftProtobuf(bytes, rawFrames: 1)))
        }
        let merged = try Opq_V1_WorkerMessage.decoded(reports, rawFrames: 1)
        #expect(merged.reports.items.first?.finished.stdout.frame == 1 && merged.reports.items.first?.finished.stdout.totalBytes == 7)
        #expect(merged.reports.items.first?.finished.operation == 43 && merged.reports.sequence == 5)
        let command: [UInt8] = field(1, Array("true".utf8))
        let work = field(6, field(1, command)) + field(6, field(1, field(3, Array("/tmp".utf8))))
        let dispatch: [UInt8] = [0x08, 0x01, 0x10, 0x01, 0x20, 0x01] + work
        let orders = field(3, field(1, field(1, dispatch)))
        let decoded = try Opq_V1_CoordinatorToWorker.decoded(orders, rawFrames: 0)
        #expect(decoded == (try Opq_V1_CoordinatorToWorker.decodedBySwiftProtobuf(orders, rawFrames: 0)))
        #expect(decoded.orders.items.first?.dispatch.work.command.argv == ["true"])
        #expect(decoded.orders.items.first?.dispatch.work.command.workingDirectory == "/tmp")
    }

    /// Decodes `bytes` both ways with 0…3 raw frames and records a difference.
    static func agree<M: WireEnvelope>(_ type: M.Type, _ bytes: [UInt8], rawFrames: Int) -> Bool {
        let hand = Outcome { () throws(WireError) in try M.decoded(bytes, rawFrames: rawFrames) }
        let reference = Outcome { () throws(WireError) in try M.decodedBySwiftProtobuf(bytes, rawFrames: rawFrames) }
        guard hand.same(as: reference) else {
            Issue.record("bytes \(bytes.map { String($0, radix: 16) }): decoded gave \(hand), SwiftProtobuf \(reference)")
            return false
        }
        if case .message(let message) = hand, let again = try? message.encodedBytes(), let reference = try? message.serializedBytes() as [UInt8] {
            #expect(again == reference, "a decoded message re-encodes as SwiftProtobuf does")
        }
        return true
    }

    @Test func changedAndBrokenBytesDecodeAsSwiftProtobufDecodesThem() throws {
        var messages = RandomMessages(seed: 21)
        var random = SplitMix64(seed: 22)
        var readByHand = 0, cases = 0
        for round in 0..<800 {
            let workerSide = round % 2 == 0
            let original: [UInt8] = workerSide ? try messages.workerMessage().serializedBytes() : try messages.coordinatorToWorker().serializedBytes()
            var bytes = original
            for _ in 0..<8 {
                bytes = WireMutations.mutate(bytes, &random)
                let rawFrames = Int.random(in: 0...3, using: &random)
                cases += 1
                if workerSide {
                    guard Self.agree(Opq_V1_WorkerMessage.self, bytes, rawFrames: rawFrames) else { return }
                    if Opq_V1_WorkerMessage.handDecoded(bytes) != nil { readByHand += 1 }
                } else {
                    guard Self.agree(Opq_V1_CoordinatorToWorker.self, bytes, rawFrames: rawFrames) else { return }
                    if Opq_V1_CoordinatorToWorker.handDecoded(bytes) != nil { readByHand += 1 }
                }
            }
        }
        // Shuffled fields, long varints and repeated scalars stay on the hand-written path; the rest falls back.
        #expect(readByHand > cases / 5, "only \(readByHand) of \(cases) changed messages were read by hand")
    }
}
