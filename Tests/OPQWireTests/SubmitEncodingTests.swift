import OPQCore
import Testing
import OPQWire

/// A big submission is encoded one operation at a time (``Opq_V1_ClientRequest/encodedSubmit(_:_:idempotencyKey:)``):
/// the bytes must be the ones the whole message would give, so the coordinator reads them as any Submit.
@Suite struct SubmitEncodingTests {
    @Test func theEncodedSubmitIsTheWholeMessagesBytes() throws {
        let cases: [(UInt64, Submission, String)] = [
            (1, ConversionSamples.submission, "key"),
            (0, ConversionSamples.submission, ""),
            (UInt64.max, Submission([OperationSpec(name: "only")]), String(repeating: "k", count: 300)),
            (300, Submission([OperationSpec()]), ""),
        ]
        for (id, submission, key) in cases {
            let whole: [UInt8] = try Opq_V1_ClientRequest.request(id) {
                $0.submit = Opq_V1_Submit(submission, idempotencyKey: key)
            }.serializedBytes()
            #expect(try Opq_V1_ClientRequest.encodedSubmit(id, submission, idempotencyKey: key) == whole, "request \(id)")
            let submit: [UInt8] = try Opq_V1_Submit(submission, idempotencyKey: key).serializedBytes()
            #expect(try Opq_V1_Submit.encodedBytes(submission, idempotencyKey: key) == submit, "request \(id)")
        }
    }

    @Test func aBigEncodedSubmitDecodesToTheSameOperations() throws {
        let specs = (0..<5_000).map { k in
            OperationSpec(name: "op-\(k)", work: .command(Command(["true", String(k)])),
                          dependencies: k % 10 == 9 ? [.name("op-\(k - 1)")] : [])
        }
        let bytes = try Opq_V1_ClientRequest.encodedSubmit(7, Submission(specs), idempotencyKey: "big")
        let frames = try Frames.encode(encodedBody: bytes)
        let decoded = try Frames.decode(frames, as: Opq_V1_ClientRequest.self).message
        #expect(decoded.requestID == 7 && decoded.submit.idempotencyKey == "big")
        let back = Submission(decoded.submit)
        #expect(back.operations.count == specs.count)
        for (a, b) in zip(back.operations, specs) { expectEqual(a, b) }
    }

    @Test func anEncodedBodyOverTheFrameLimitIsRefused() {
        #expect(throws: WireError.self) { try Frames.encode(encodedBody: [UInt8](repeating: 0, count: WireLimits.maxFrameBytes + 1)) }
    }
}
