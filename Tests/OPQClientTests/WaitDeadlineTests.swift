import Foundation
@testable import OPQClient
import Testing

/// Any timeout a caller passes becomes a wait that cannot trap (Foundation's `NSCondition.wait(until:)`
/// does, for dates past 2262).
@Suite struct WaitDeadlineTests {
    @Test func infiniteOrLongerThanAboutAHundredYearsMeansNoLimit() {
        for seconds in [Double.infinity, .greatestFiniteMagnitude, 1e12, 3.3e9] {
            #expect(WaitDeadline(seconds: seconds).date == nil, "\(seconds)")
            #expect(WaitDeadline.limit(seconds) == nil, "\(seconds)")
        }
        #expect(WaitDeadline(seconds: nil).date == nil && WaitDeadline.limit(nil) == nil)
    }

    @Test func zeroNegativeOrNaNMeansDoNotWait() {
        for seconds in [0, -1, -Double.infinity, .nan] {
            let date = WaitDeadline(seconds: seconds).date
            #expect(date.map { $0 <= Date() } == true, "\(seconds)")
        }
        #expect(WaitDeadline.limit(-1) == -1, "passed on: the coordinator refuses it with a clear error")
    }

    @Test func anOrdinaryTimeoutIsThatFarAhead() {
        let date = WaitDeadline(seconds: 30).date
        #expect(date.map { abs($0.timeIntervalSinceNow - 30) < 5 } == true)
        #expect(WaitDeadline.limit(30) == 30)
        let condition = NSCondition()
        let waited = condition.withLock { condition.wait(until: WaitDeadline(seconds: .nan)) }
        #expect(!waited, "a deadline already passed returns at once")
    }
}
