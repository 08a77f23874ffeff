import OPQCore
import Testing
import OPQWire

/// What a peer can make the coordinator keep or compute is bounded at validation.
@Suite struct BoundsTests {
    static func progress(_ message: String, operation: UInt64 = 1) -> Opq_V1_WorkerMessage {
        .reports([.progress(.with {
            $0.operation = operation
            $0.attempt = 1
            $0.message = message
        })])
    }

    @Test func aProgressMessageOverTheLimitIsRefusedNamingTheField() {
        let limit = WireLimits.maxProgressMessageBytes
        #expect(decodeError(Self.progress(String(repeating: "x", count: limit))) == nil)
        let error = decodeError(Self.progress(String(repeating: "x", count: 1 << 20)))
        #expect(error == .invalidField("WorkerMessage.reports.items[0].progress.message",
                                       problem: "is 1048576 bytes long; at most \(limit) are allowed"))
    }

    @Test func aClampedProgressMessageFitsAndKeepsWholeCharacters() {
        let limit = WireLimits.maxProgressMessageBytes
        #expect(Opq_V1_Progress.clampedMessage("short") == "short")
        let long = String(repeating: "é", count: limit)  // 2 bytes each
        let clamped = Opq_V1_Progress.clampedMessage(long)
        #expect(clamped.utf8.count <= limit && clamped.hasSuffix("…"))
        #expect(clamped.dropLast().allSatisfy { $0 == "é" })
        #expect(decodeError(Self.progress(clamped)) == nil)
    }

    @Test(arguments: [1e300, Double.infinity, -1, Double.nan, WireLimits.maxSeconds + 1])
    func aWaitTimeoutOutsideTheDocumentedRangeIsRefused(_ timeout: Double) {
        let error = decodeError(Opq_V1_ClientRequest.request(1) {
            $0.wait.job = 1
            $0.wait.timeoutSeconds = timeout
        })
        #expect(error == .invalidField("ClientRequest.wait.timeout_seconds",
                                       problem: "must be \(Limits.durationRange()), not \(timeout)"))
    }

    @Test func idsAtTheIntegerLimitsAreWellFormedRequests() {
        // Any id ≥ 1 is a valid request; whether it exists is the coordinator's answer ("no such operation").
        for id: UInt64 in [1, 1 << 63, UInt64.max] {
            #expect(decodeError(Opq_V1_ClientRequest.request(1) { $0.getOperation.operation = id }) == nil)
            #expect(decodeError(Opq_V1_ClientRequest.request(1) { $0.getJob.job = id }) == nil)
            #expect(decodeError(Opq_V1_ClientRequest.request(1) { $0.listJobs.after = id }) == nil)
        }
        #expect(decodeError(Opq_V1_ClientRequest.request(1) { $0.getOperation.operation = 0 })
            == .invalidField("ClientRequest.get_operation.operation", problem: "must be an id ≥ 1, not 0"))
    }
}
