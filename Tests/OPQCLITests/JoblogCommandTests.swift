import Foundation
import Testing

/// `opq map --joblog/--resume/--resume-failed/--halt` against GNU parallel itself: both run the same
/// commands over the same items one at a time, and their joblogs must agree line by line on Seq, Host,
/// Exitval, Signal and Command, with parallel's number formats in the other columns.
@Suite(.serialized) struct JoblogCommandTests {
    /// Fails (`f…`) with exit status 4; anything else succeeds.
    static let script = "case {} in f*) exit 4;; esac; true"

    struct Line: Equatable, CustomStringConvertible {
        var seq, host, exitval, signal, command: String
        var description: String { "\(seq) \(host) \(exitval) \(signal) \(command)" }
    }

    /// The joblog at `path`: its lines after the header, checked for parallel's formats.
    private func joblog(_ path: String) throws -> [Line] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.last == "", "the joblog ends with a newline")
        lines.removeLast()
        #expect(lines.first == "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand")
        return lines.dropFirst().map { line in
            let fields = line.split(separator: "\t", maxSplits: 8, omittingEmptySubsequences: false).map(String.init)
            #expect(fields.count == 9, "\(line)")
            guard fields.count == 9 else { return Line(seq: "", host: "", exitval: "", signal: "", command: line) }
            #expect(fields[2].wholeMatch(of: /[0-9]{10}\.[0-9]{3}/) != nil, "Starttime \(fields[2])")
            #expect(fields[3].wholeMatch(of: #/ *[0-9]+\.[0-9]{3}/#) != nil && fields[3].count >= 10, "JobRuntime \(fields[3].debugDescription)")
            return Line(seq: fields[0], host: fields[1], exitval: fields[6], signal: fields[7], command: fields[8])
        }
    }

    /// Runs `opq map --local 1 OPTIONS -- TEMPLATE` and `parallel -j1 OPTIONS TEMPLATE` (with -q unless `shell`)
    /// on `items`, each with its own joblog in `scratch`; returns both exit statuses.
    private func both(_ scratch: Scratch, _ options: [String], _ template: [String], items: [String], shell: Bool) throws
        -> (opq: Int32?, parallel: Int32?) {
        let parallel = try ParallelComparisonTests().gnuParallel()
        let input = try scratch.write("input-\(UUID().uuidString.prefix(6))", items.map { $0 + "\n" }.joined())
        let opq = try Run("opq", ["map", "--local", "1", "--quiet", "--joblog", scratch.path("opq.log")] + options
                          + (shell ? ["--shell"] : []) + ["--"] + template, in: scratch, input: input)
        let opqStatus = opq.finish(within: 120)
        let reference = try Run(parallel, ["--will-cite", "-j1", "--joblog", scratch.path("parallel.log")] + options
                                + (shell ? [] : ["-q"]) + template, in: scratch, environment: ["HOME": scratch.path("")], input: input)
        let parallelStatus = reference.finish(within: 120)
        #expect(parallelStatus != nil, "parallel: \(reference.stderr)")
        #expect(opqStatus != nil, "opq: \(opq.stdout)\(opq.stderr)")
        return (opqStatus, parallelStatus)
    }

    @Test func joblogMatchesParallelsColumnsForShellAndArgvCommands() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let items = ["a", "f1", "it's", "", "f 2", "b/c.d"]
        let shell = try both(scratch, [], [Self.script], items: items, shell: true)
        #expect(shell.opq == 1 && shell.parallel == 2)
        let expected = try joblog(scratch.path("parallel.log"))
        #expect(expected.count == items.count)
        #expect(try joblog(scratch.path("opq.log")) == expected)

        let argv = try both(scratch, [], ["sh", "-c", "exit $1", "x", "{}"], items: ["0", "3", "a b", "0"], shell: false)
        #expect(argv.opq == 1 && argv.parallel == 2)
        #expect(try joblog(scratch.path("opq.log")) == (try joblog(scratch.path("parallel.log"))))
    }

    @Test func resumeAndResumeFailedRunWhatParallelRunsAndAppend() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        _ = try both(scratch, [], [Self.script], items: ["a", "f1", "b"], shell: true)
        let longer = ["a", "f1", "b", "c", "f2"]
        _ = try both(scratch, ["--resume"], [Self.script], items: longer, shell: true)
        let resumed = try joblog(scratch.path("opq.log"))
        #expect(resumed.map(\.seq) == ["1", "2", "3", "4", "5"])
        #expect(resumed == (try joblog(scratch.path("parallel.log"))))
        let again = try both(scratch, ["--resume-failed"], [Self.script], items: longer, shell: true)
        #expect(again.opq == 1)
        let rerun = try joblog(scratch.path("opq.log"))
        #expect(rerun.map(\.seq) == ["1", "2", "3", "4", "5", "2", "5"])
        #expect(rerun == (try joblog(scratch.path("parallel.log"))))
        // Everything done: nothing runs, exit 0.
        let done = try Run("opq", ["map", "--local", "1", "--joblog", scratch.path("opq.log"), "--resume", "--shell", "--", Self.script],
                           in: scratch, input: try scratch.write("three", "a\nf1\nb\n"))
        #expect(done.finish(within: 60) == 0)
        #expect(done.stderr.contains("nothing to run"))
        #expect(try joblog(scratch.path("opq.log")).count == 7)
    }

    @Test func onACoordinatorTheHostIsTheWorkerThatRanTheCommand() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try AddWatchCommandTests.Cluster(scratch)  // one worker, named w1 (parallel -q writes '=' quoted too)
        defer { cluster.stop() }
        let run = try cluster.opq(["map", "--quiet", "--joblog", scratch.path("remote.log"), "--", "test", "{}", "=", "a", ":::", "a", "b"], within: 60)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let lines = try joblog(scratch.path("remote.log")).sorted { $0.seq < $1.seq }
        #expect(lines == [Line(seq: "1", host: "w1", exitval: "0", signal: "0", command: "test a '=' a"),
                          Line(seq: "2", host: "w1", exitval: "1", signal: "0", command: "test b '=' a")])
    }

    @Test func haltEndsWhereParallelEndsWithItsExitStatus() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // The commands after the failure sleep, so a halt that did not happen would show in the time and the log.
        let script = "case {} in f*) exit 4;; s*) sleep 30;; esac; true"
        let items = ["a", "f1", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"]  // 10%: exactly one command
        for (halt, status) in [("now,fail=1", Int32(4)), ("soon,fail=1", 4), ("now,fail=10%", 4), ("now,fail=5%", 10), ("2", 4)] {
            let started = Date()
            let result = try both(scratch, ["--halt", halt], [script], items: items, shell: true)
            #expect(result.opq == status && result.parallel == status, "--halt \(halt): opq \(String(describing: result.opq)), parallel \(String(describing: result.parallel))")
            let lines = try joblog(scratch.path("opq.log"))
            #expect(lines == (try joblog(scratch.path("parallel.log"))), "--halt \(halt)")
            #expect(lines.map(\.seq) == ["1", "2"], "--halt \(halt)")
            #expect(Date().timeIntervalSince(started) < 60, "--halt \(halt) waited for the sleeping commands")
        }
        let success = try both(scratch, ["--halt", "now,success=1"], [script], items: ["a", "s1", "s2"], shell: true)
        #expect(success.opq == 0 && success.parallel == 0)
    }
}
