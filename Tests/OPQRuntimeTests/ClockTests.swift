import OPQRuntime
import Testing

struct ClockTests {
    @Test func theManualClockMovesOnlyWhenAdvancedOrSet() {
        let clock = ManualClock(start: 100)
        #expect(clock.now() == 100)
        #expect(clock.now() == 100)
        clock.advance(by: 2.5)
        #expect(clock.now() == 102.5)
        clock.set(to: 200)
        #expect(clock.now() == 200)
    }

    @Test func theMonotonicClockReadsUnixSecondsAndNeverRunsBackwards() {
        let clock: any SecondsClock = MonotonicClock()
        var last = clock.now()
        for _ in 0..<10_000 {
            let now = clock.now()
            #expect(now >= last)
            last = now
        }
        // Unix seconds: after 2020-01-01, and instance and static readings share one anchor.
        #expect(last > 1_577_836_800)
        #expect(abs(MonotonicClock.now() - MonotonicClock().now()) < 1)
    }
}
