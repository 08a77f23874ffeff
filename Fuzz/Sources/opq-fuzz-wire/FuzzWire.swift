import CFuzzDriver
import Foundation
import OPQCore
import OPQWire

// libFuzzer target over every decoder of the wire protocol: `Frames.decode`/`decodeRouted` (framing,
// protobuf, validation) for the four envelopes, then every conversion a coordinator, worker or client
// applies to a message that passed validation, then a re-encode that must decode again.
//
// Input layout (what the committed seeds in Fuzz/Corpus/wire follow; libFuzzer mutates from there):
//
//     byte 0, bits 0–1   envelope: 0 WorkerMessage, 1 CoordinatorToWorker, 2 ClientRequest, 3 CoordinatorToClient
//             bit 2      routed: an identity frame comes first (decoded with `decodeRouted`)
//             bit 3      0: frames are [signature, rest of input, raw frames…]
//                        1: the rest of the input, split into frames at every 0xFE 0xFF (signature included or not)
//             bits 4–7   raw frames appended in layout 0 (frame k holds k bytes)
//     bytes 1…           the protobuf body (layout 0) or the frames (layout 1)
//
// `OPQ_FUZZ_WRITE_SEEDS=DIR opq-fuzz-wire` writes the seed corpus (valid messages of every kind) and exits.

/// The entry point (SwiftPM links `main` to it): writes the seeds when asked, else runs libFuzzer.
@_cdecl("opq_fuzz_wire_main")
public func fuzzWireMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    if let directory = ProcessInfo.processInfo.environment["OPQ_FUZZ_WRITE_SEEDS"] {
        do {
            try WireSeeds.write(to: directory)
            return 0
        } catch {
            FileHandle.standardError.write(Data("cannot write the seeds to \(directory): \(error)\n".utf8))
            return 2
        }
    }
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard let selector = input.first else { return 0 }
    let frames = WireInput.frames(selector: selector, body: input[1...])
    let routed = selector & 0b100 != 0
    switch selector & 0b11 {
    case 0: WireInput.exercise(Opq_V1_WorkerMessage.self, frames, routed: routed, then: WireUse.worker)
    case 1: WireInput.exercise(Opq_V1_CoordinatorToWorker.self, frames, routed: routed, then: WireUse.toWorker)
    case 2: WireInput.exercise(Opq_V1_ClientRequest.self, frames, routed: routed, then: WireUse.client)
    default: WireInput.exercise(Opq_V1_CoordinatorToClient.self, frames, routed: routed, then: WireUse.toClient)
    }
    return 0
}

/// How one fuzz input becomes frames, and the decode → use → re-encode round of one envelope type.
enum WireInput {
    static let separator: [UInt8] = [0xFE, 0xFF]
    static let identity: [UInt8] = Array("fuzz-peer".utf8)

    static func frames(selector: UInt8, body: ArraySlice<UInt8>) -> [[UInt8]] {
        var frames: [[UInt8]] = selector & 0b100 != 0 ? [identity] : []
        if selector & 0b1000 == 0 {
            frames.append(Frames.signature)
            frames.append(Array(body))
            for k in 0..<Int(selector >> 4) { frames.append([UInt8](repeating: UInt8(k), count: k)) }
        } else {
            var current: [UInt8] = []
            var index = body.startIndex
            while index < body.endIndex {
                if body[index] == separator[0], index + 1 < body.endIndex, body[index + 1] == separator[1] {
                    frames.append(current)
                    current = []
                    index += 2
                } else {
                    current.append(body[index])
                    index += 1
                }
            }
            frames.append(current)
        }
        return frames
    }

    /// Decodes `frames` as `M`; when it validates, applies `use` and checks that the message re-encodes
    /// to frames that decode and validate again (validation depends on the content only).
    static func exercise<M: WireEnvelope>(
        _ type: M.Type, _ frames: [[UInt8]], routed: Bool, then use: (M, [[UInt8]]) -> Void
    ) {
        agree(M.self, frames, from: routed ? 1 : 0)
        let decoded: (message: M, raw: [[UInt8]])
        do {
            if routed {
                let (_, message, raw) = try Frames.decodeRouted(frames, as: M.self)
                decoded = (message, raw)
            } else {
                decoded = try Frames.decode(frames, as: M.self)
            }
        } catch {
            _ = error.description  // every refusal must describe itself without trapping
            _ = Opq_V1_Error(error)
            _ = Opq_V1_Disconnect(error)
            return
        }
        use(decoded.message, decoded.raw)
        do {
            let again = try Frames.encode(decoded.message, raw: decoded.raw)
            _ = try Frames.decode(again, as: M.self)
        } catch {
            fatalError("a valid \(M.protoMessageName) does not survive a re-encode: \(error)")
        }
    }

    /// The protobuf frame decoded as every side decodes it (`M.decoded`: by hand for the per-command
    /// messages, every oneof case of them) and as SwiftProtobuf does (`decodedBySwiftProtobuf`): the same
    /// value or the same error, and a decoded message re-encodes to SwiftProtobuf's bytes.
    static func agree<M: WireEnvelope>(_ type: M.Type, _ frames: [[UInt8]], from start: Int) {
        guard frames.count > start + 1 else { return }
        let body = frames[start + 1], rawFrames = frames.count - start - 2
        let decoded: Result<M, WireError> = Result { () throws(WireError) in try M.decoded(body, rawFrames: rawFrames) }
        let reference: Result<M, WireError> = Result { () throws(WireError) in try M.decodedBySwiftProtobuf(body, rawFrames: rawFrames) }
        switch (decoded, reference) {
        case let (.success(a), .success(b)):
            guard a.isEqualTo(message: b) || a.textFormatString() == b.textFormatString() else {
                fatalError("\(M.protoMessageName): decoded \(a.textFormatString()), SwiftProtobuf \(b.textFormatString())")
            }
            guard let again = try? a.encodedBytes(), let bytes = try? a.serializedBytes() as [UInt8], again == bytes else {
                fatalError("\(M.protoMessageName): the hand-written bytes differ from SwiftProtobuf's for \(a.textFormatString())")
            }
        case let (.failure(a), .failure(b)):
            guard a == b else { fatalError("\(M.protoMessageName): decoding refused with \(a), SwiftProtobuf with \(b)") }
        default:
            fatalError("\(M.protoMessageName): decoded \(decoded), SwiftProtobuf \(reference)")
        }
    }
}
