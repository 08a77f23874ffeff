import OPQJobFile
import Testing

@Suite struct JoblogTests {
    @Test func linesUseParallelsNumberFormats() {
        let entry = Joblog.Entry(seq: 4, host: ":", start: 1795493367.0814, runtime: 0.0162, receive: 7, exitval: 3, signal: 0,
                                 command: "echo 'fail 3'")
        #expect(entry.line == "4\t:\t1795493367.081\t     0.016\t0\t7\t3\t0\techo 'fail 3'")
        #expect(Joblog.Entry(line: Substring(entry.line)) == Joblog.Entry(seq: 4, host: ":", start: 1795493367.081, runtime: 0.016,
                                                                          receive: 7, exitval: 3, signal: 0, command: "echo 'fail 3'"))
        let multiline = Joblog.Entry(seq: 1, host: "w1", start: 1, runtime: 12345.6789, exitval: -1, signal: 15, command: "a\nb")
        #expect(multiline.line == "1\tw1\t1.000\t 12345.679\t0\t0\t-1\t15\ta\0b")
        #expect(Joblog.Entry(line: Substring(multiline.line))?.command == "a\nb")
    }

    @Test func quotingIsParallels() {
        #expect(Joblog.quoted("a-b_c.d+e/f9") == "a-b_c.d+e/f9")
        #expect(Joblog.quoted("") == "''")
        #expect(Joblog.quoted("a b") == "'a b'")
        #expect(Joblog.quoted("it's") == #"'it'"'"'s'"#)
        #expect(Joblog.quoted("'x'") == #""'"'x'"'""#)
        #expect(Joblog.quoted("é") == "'é'")
    }

    @Test func resumeSkipsEverySeqAndResumeFailedOnlyTheSucceeded() throws {
        let text = Joblog.header + "\n" + [
            Joblog.Entry(seq: 1, host: ":", start: 1, runtime: 0, exitval: 0, signal: 0, command: "a"),
            Joblog.Entry(seq: 2, host: ":", start: 1, runtime: 0, exitval: 4, signal: 0, command: "b"),
            Joblog.Entry(seq: 3, host: ":", start: 1, runtime: 0, exitval: 0, signal: 9, command: "c"),
            Joblog.Entry(seq: 2, host: ":", start: 2, runtime: 0, exitval: 0, signal: 0, command: "b"),
        ].map(\.line).joined(separator: "\n") + "\n"
        let entries = try Joblog.entries(text, path: "j.log")
        #expect(entries.map(\.seq) == [1, 2, 3, 2])
        #expect(Joblog.done(entries, failedToo: true) == [1, 2, 3])
        #expect(Joblog.done(entries, failedToo: false) == [1, 2])
        #expect(try Joblog.entries("", path: "j.log").isEmpty)
    }

    @Test func aFileThatIsNotAJoblogIsRefusedWithItsLine() {
        #expect(throws: JoblogError.notAJoblog(path: "x", line: 1)) { try Joblog.entries("hello\n", path: "x") }
        #expect(throws: JoblogError.notAJoblog(path: "x", line: 3)) {
            try Joblog.entries(Joblog.header + "\n1\t:\t1.0\t 0.0\t0\t0\t0\t0\tok\nbroken\n", path: "x")
        }
    }
}

@Suite struct HaltPolicyTests {
    @Test func parsesParallelsSpellings() throws {
        #expect(try HaltPolicy.parse("never") == nil)
        #expect(try HaltPolicy.parse("0") == nil)
        #expect(try HaltPolicy.parse("2") == HaltPolicy(when: .now, condition: .fail, threshold: .count(1)))
        #expect(try HaltPolicy.parse("-1") == HaltPolicy(when: .soon, condition: .success, threshold: .count(1)))
        #expect(try HaltPolicy.parse("5%") == HaltPolicy(when: .soon, condition: .fail, threshold: .percent(5)))
        #expect(try HaltPolicy.parse("now,fail=10%") == HaltPolicy(when: .now, condition: .fail, threshold: .percent(10)))
        #expect(try HaltPolicy.parse("soon,done=3") == HaltPolicy(when: .soon, condition: .done, threshold: .count(3)))
        for bad in ["later,fail=1", "now", "now,fail", "now,oops=1", "now,fail=0", "now,fail=x", "now,fail=101%"] {
            #expect(throws: HaltPolicyError.invalid(bad)) { try HaltPolicy.parse(bad) }
        }
    }

    /// The figures of `parallel -j1 --halt H` over a f1 b f2 c f3 d e where f* exit 4 (run by hand
    /// with parallel 20221122): which command halts, and the exit status.
    @Test func haltsWhereParallelHaltsWithItsExitStatus() throws {
        let codes: [Int32] = [0, 4, 0, 4, 0, 4, 0, 0]
        let expected: [(String, halts: Int?, status: Int32)] = [
            ("now,fail=1", 2, 4), ("soon,fail=1", 2, 4), ("soon,fail=2", 4, 2), ("now,fail=10%", 2, 13),
            ("now,fail=50%", nil, 38), ("now,success=1", 1, 0), ("soon,success=2", 3, 0), ("now,success=50%", 7, 0),
            ("now,done=2", 2, 1),
        ]
        for (spelling, halts, status) in expected {
            var tracker = HaltTracker(policy: try #require(try HaltPolicy.parse(spelling)), total: codes.count)
            var haltedAt: Int?
            for (index, code) in codes.enumerated() {
                if tracker.record(exitCode: code, signal: nil) != nil { haltedAt = index + 1; break }
            }
            #expect(haltedAt == halts, "\(spelling)")
            #expect(tracker.exitStatus == status, "\(spelling)")
        }
    }

    @Test func aPercentageOfExactlyOneCommandEndsWithItsExitStatus() throws {
        var tracker = HaltTracker(policy: try #require(try HaltPolicy.parse("now,fail=10%")), total: 10)
        #expect(tracker.record(exitCode: 0, signal: nil) == nil)
        #expect(tracker.record(exitCode: 4, signal: nil) == .now)
        #expect(tracker.exitStatus == 4)
        var three = HaltTracker(policy: try #require(try HaltPolicy.parse("now,fail=10%")), total: 3)
        #expect(three.record(exitCode: 4, signal: nil) == .now)
        #expect(three.exitStatus == 34)
    }

    @Test func aKilledCommandHaltsWith128PlusItsSignal() throws {
        var tracker = HaltTracker(policy: try #require(try HaltPolicy.parse("now,fail=1")), total: 3)
        #expect(tracker.record(exitCode: nil, signal: 9) == .now)
        #expect(tracker.exitStatus == 137)
    }
}
