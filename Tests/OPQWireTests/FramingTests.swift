import OPQCore
import Testing
import OPQWire

@Suite struct FramingTests {
    @Test func everyWorkerMessageKindRoundTrips() throws {
        for message in Samples.workerMessages {
            #expect(try roundTrip(message).message == message)
        }
    }

    @Test func everyCoordinatorToWorkerKindRoundTrips() throws {
        for message in Samples.coordinatorToWorker {
            #expect(try roundTrip(message).message == message)
        }
    }

    @Test func everyClientRequestKindRoundTrips() throws {
        for message in Samples.clientRequests {
            #expect(try roundTrip(message).message == message)
        }
    }

    @Test func everyCoordinatorToClientKindRoundTrips() throws {
        for (k, message) in Samples.coordinatorToClient.enumerated() {
            // Reply 8 references one raw frame (a stdout tail).
            let raw: [[UInt8]] = k == 7 ? [Array("out".utf8)] : []
            #expect(try roundTrip(message, raw: raw).message == message)
        }
    }

    @Test func aMessageIsTheSignatureThenOneProtobufFrame() throws {
        let frames = try Frames.encode(Opq_V1_WorkerMessage.heartbeat)
        #expect(frames.count == 2)
        #expect(frames[0] == Array("OPQ/1".utf8))
    }

    @Test func routerSideAddsAndStripsTheIdentityFrame() throws {
        let message = Samples.coordinatorToWorker[2]
        let frames = try Frames.encode(message, to: Array("w1".utf8))
        #expect(frames[0] == Array("w1".utf8))
        #expect(frames[1] == Frames.signature)

        // What a DEALER receives is the same minus the identity.
        #expect(try Frames.decode(Array(frames.dropFirst()), as: Opq_V1_CoordinatorToWorker.self).message == message)

        let incoming = try Frames.encode(Samples.workerMessages[0])
        let routed = try Frames.decodeRouted([Array("w1".utf8)] + incoming, as: Opq_V1_WorkerMessage.self)
        #expect(routed.identity == Array("w1".utf8))
        #expect(routed.message == Samples.workerMessages[0])
        #expect(routed.raw.isEmpty)
    }

    @Test func outputTailsTravelAsRawFramesReferencedByIndex() throws {
        var raw: [[UInt8]] = []
        var finished = Samples.finished
        let stdout = [UInt8](repeating: 0x41, count: 1000)
        finished.attachOutput(stdout: stdout, stdoutTotal: 5000, stderr: [0xFF, 0x00, 0xFE], to: &raw)
        var second = Opq_V1_Finished(OperationID(43), attempt: 1, report: .succeeded, duration: 0.1)
        second.attachOutput(stdout: [], stderr: Array("warn".utf8), to: &raw)

        let (decoded, frames) = try roundTrip(Opq_V1_WorkerMessage.reports([.finished(finished), .finished(second)]), raw: raw)
        #expect(frames.count == 3)
        let items = decoded.reports.items.map(\.finished)
        #expect(items[0].stdout.bytes(in: frames) == stdout)
        #expect(items[0].stdout.isTruncated(in: frames))
        #expect(items[0].stderr.bytes(in: frames) == [0xFF, 0x00, 0xFE])
        #expect(!items[0].stderr.isTruncated(in: frames))
        #expect(items[1].stdout.frame == 0 && items[1].stdout.bytes(in: frames).isEmpty)
        #expect(items[1].stderr.bytes(in: frames) == Array("warn".utf8))
    }

    @Test func encodeRefusesAFrameTheReceiverWouldDropUs() {
        let big = [UInt8](repeating: 0, count: WireLimits.maxFrameBytes + 1)
        let error = wireError { () throws(WireError) in _ = try Frames.encode(Opq_V1_WorkerMessage.heartbeat, raw: [big]) }
        #expect(error == .frameTooLarge(frame: 2, bytes: big.count, limit: WireLimits.maxFrameBytes))

        let many = [[UInt8]](repeating: [1], count: WireLimits.maxFrames)
        let tooMany = wireError { () throws(WireError) in _ = try Frames.encode(Opq_V1_WorkerMessage.heartbeat, raw: many) }
        #expect(tooMany == .tooManyFrames(count: many.count + 2, limit: WireLimits.maxFrames))
    }
}
