#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import OPQCore
import Testing
import ZeroMQ

@Suite("Spinning before a wait")
struct SpinningWaitTests {
    @Test("Spins only when a message is expected, spinning is on and no miss is backed off from")
    func whenItSpins() {
        let spin = SpinningWait(limit: .microseconds(50))
        #expect(spin.shouldSpin(expecting: true))
        #expect(!spin.shouldSpin(expecting: false))
        #expect(!SpinningWait.off.shouldSpin(expecting: true))
        #expect(!SpinningWait(limit: .zero).shouldSpin(expecting: true))
    }

    @Test("Misses in a row skip 1, 2, 4 … 64 chances; a hit starts over; waits not expecting count for nothing")
    func backoff() {
        var spin = SpinningWait(limit: .microseconds(50))
        for expected in [1, 2, 4, 8, 16, 32, 64, 64, 64] {
            #expect(spin.shouldSpin(expecting: true))
            spin.spun(found: false)
            #expect(spin.backoff == expected && spin.skip == expected)
            // Waits that expect nothing leave the count as it is.
            spin.skipped(expecting: false)
            #expect(spin.skip == expected)
            for left in (0..<expected).reversed() {
                #expect(!spin.shouldSpin(expecting: true))
                spin.skipped(expecting: true)
                #expect(spin.skip == left)
            }
        }
        #expect(spin.misses == 9 && spin.hits == 0)
        spin.spun(found: true)
        #expect(spin.backoff == 0 && spin.skip == 0 && spin.hits == 1)
        spin.spun(found: false)
        #expect(spin.backoff == 1 && spin.skip == 1)
    }

    @Test("Seeded random sequences keep 0 ≤ skip ≤ backoff ≤ 64, backoff 0 or a power of two, and spin exactly when the model says")
    func randomSequences() {
        var random = SplitMix64(seed: 0x5EED_0022)
        for _ in 0..<200 {
            var spin = SpinningWait(limit: .microseconds(10))
            // The model: the number of misses in a row, and the chances left to skip.
            var missesInRow = 0, toSkip = 0
            for _ in 0..<500 {
                let expecting = random.next() % 4 != 0
                let modelSpins = expecting && toSkip == 0
                #expect(spin.shouldSpin(expecting: expecting) == modelSpins)
                if modelSpins {
                    let found = random.next() % 3 == 0
                    spin.spun(found: found)
                    if found {
                        missesInRow = 0
                    } else {
                        missesInRow += 1
                        toSkip = min(1 << min(missesInRow - 1, 62), SpinningWait.maximumBackoff)
                    }
                } else {
                    spin.skipped(expecting: expecting)
                    if expecting && toSkip > 0 { toSkip -= 1 }
                }
                #expect(spin.skip == toSkip)
                #expect(0 <= spin.skip && spin.skip <= spin.backoff && spin.backoff <= SpinningWait.maximumBackoff)
                #expect(spin.backoff == 0 || spin.backoff & (spin.backoff - 1) == 0)
            }
        }
    }

    @Test("The limit is clamped to 0…1 ms; a command line's value outside it is named")
    func limits() {
        #expect(SpinningWait(limit: .seconds(5)).limit == SpinningWait.maximum)
        #expect(SpinningWait(limit: .microseconds(-3)).limit == .zero)
        #expect(SpinningWait.problem(microseconds: 0) == nil)
        #expect(SpinningWait.problem(microseconds: 1_000) == nil)
        #expect(SpinningWait.problem(microseconds: 1_001) == "the spin must be from 0 to 1000 microseconds, not 1001")
        #expect(SpinningWait.problem(microseconds: -1) == "the spin must be from 0 to 1000 microseconds, not -1")
        #expect(SpinningWait.problem(microseconds: Int.min) != nil)
    }

    @Test("A poll that spins finds what is ready without waiting, records the hit; one that finds nothing records the miss, waits its timeout and skips the next chance")
    func pollerSpins() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var poller = Poller()
        let item = poller.add(fileDescriptor: fds[0])
        var spin = SpinningWait(limit: .microseconds(200))

        var byte: UInt8 = 1
        #expect(write(fds[1], &byte, 1) == 1)
        #expect(try poller.poll(timeout: 5_000, spinning: &spin, expecting: true) == 1)
        #expect(poller.isReadable(item))
        #expect(spin.hits == 1 && spin.misses == 0)
        #expect(read(fds[0], &byte, 1) == 1)

        let started = ContinuousClock.now
        #expect(try poller.poll(timeout: 20, spinning: &spin, expecting: true) == 0)
        #expect(ContinuousClock.now - started >= .milliseconds(20))
        #expect(spin.hits == 1 && spin.misses == 1 && spin.skip == 1)

        // The next chance is skipped (a plain wait); a timeout of 0 never spins nor counts.
        #expect(try poller.poll(timeout: 0, spinning: &spin, expecting: true) == 0)
        #expect(spin.skip == 1)
        #expect(try poller.poll(timeout: 1, spinning: &spin, expecting: true) == 0)
        #expect(spin.skip == 0 && spin.misses == 1)
    }
}
