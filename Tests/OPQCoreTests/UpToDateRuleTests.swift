import Testing
@testable import OPQCore

/// A worker that found an operation up to date (job files' `outputs:`) reports success with reason `upToDate`.
@Suite struct UpToDateRuleTests {
    @Test func aSucceededAttemptReportedUpToDateFinishesSucceededWithThatReason() throws {
        var h = Harness()
        try h.join("w1")
        try h.submit([op("a"), op("b", after: ["a"])])
        try h.start("a")
        try h.complete("a", AttemptReport(.succeeded, reason: .upToDate))
        #expect(h.outcome("a") == .succeeded && h.snapshot("a").reason == .upToDate)
        try h.start("b")
        try h.complete("b")
        #expect(h.outcome("b") == .succeeded && h.snapshot("b").reason == .completed, "a dependant runs as after any success")
    }
}
