import Foundation
import Testing

/// `opq map` against GNU parallel itself (Debian's `parallel`, installed by scripts/bootstrap.sh): both
/// run the same recorder command over the same input, every operation writes its arguments to a file
/// named by its sequence number, and the files must be identical, operation by operation. The reference
/// is whatever the installed `parallel` does, so these tests follow its rules rather than our reading
/// of them. `parallel -q` is the match for opq's argv mode (its command words are not shell code).
@Suite(.serialized) struct ParallelComparisonTests {
    /// Writes its arguments, each NUL-terminated, to the file named by its first argument.
    static let recorder = ["sh", "-c", #"printf '%s\0' "$@" > "$0""#]

    /// Items that path-style code gets wrong: trailing and doubled slashes, dot files, `.` and `..`,
    /// empty, leading dashes, quotes, shell syntax, unicode, tabs and newlines.
    static let awkwardItems = [
        "trailing/", "dir/sub/", "a.b/", ".hidden", "a/.hidden", "a//b.c", ".", "..", "/", "//", "", "a.", "x/a.b.c",
        "///a//b//", "/x", "../up.txt", "with space.tar.gz", "it's quoted.txt", "double\"quote.md", "$HOME and $(date).log",
        "*.star", "-rf", "--", "-n", "ünïcödé 日本.txt", "tab\there.txt", "dir.d/file", "new\nline/x.y", "a\nb.c",
        "back\\slash", "{}", "a b/c d.e f",
    ]

    /// The GNU parallel on PATH; fails the test (not skips it) when only moreutils' or none is there.
    func gnuParallel() throws -> String {
        let scratch = try Scratch()
        defer { scratch.remove() }
        for directory in ["/usr/bin", "/usr/local/bin", "/bin"] where FileManager.default.isExecutableFile(atPath: directory + "/parallel") {
            let version = try Run(directory + "/parallel", ["--version"], in: scratch)
            if version.finish(within: 30) == 0, version.stdout.hasPrefix("GNU parallel") { return directory + "/parallel" }
        }
        Issue.record("GNU parallel is not installed: run scripts/bootstrap.sh (apt-get install parallel)")
        throw POSIXError(.ENOENT)
    }

    /// Runs `opq map --local jobs OPTIONS -- recorder DIR/{#} TEMPLATE SOURCES` and `parallel -q -j jobs
    /// OPTIONS recorder DIR/{#} TEMPLATE SOURCES` on `input`, and compares what each operation received.
    /// Returns the number of operations.
    @discardableResult
    private func compare(_ options: [String], _ template: [String], sources: [String] = [], input: [UInt8] = [],
                         jobs: Int = 2) throws -> Int {
        let parallel = try gnuParallel()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let inputPath = scratch.path("input")
        FileManager.default.createFile(atPath: inputPath, contents: Data(input))
        for side in ["opq", "parallel"] {
            try FileManager.default.createDirectory(atPath: scratch.path(side), withIntermediateDirectories: true)
        }
        let command = { (side: String) in Self.recorder + [scratch.path(side) + "/{#}"] + template + sources }
        let opq = try Run("opq", ["map", "--local", "\(jobs)", "--quiet"] + options + ["--"] + command("opq"), in: scratch, input: inputPath)
        #expect(opq.finish(within: 120) == 0, "opq: \(opq.stdout)\(opq.stderr)")
        let reference = try Run(parallel, ["--will-cite", "-q", "-j", "\(jobs)"] + options + command("parallel"), in: scratch,
                                environment: ["HOME": scratch.path("")], input: inputPath)
        #expect(reference.finish(within: 120) == 0, "parallel: \(reference.stderr)")

        let expected = try FileManager.default.contentsOfDirectory(atPath: scratch.path("parallel")).sorted()
        let got = try FileManager.default.contentsOfDirectory(atPath: scratch.path("opq")).sorted()
        #expect(!expected.isEmpty, "parallel ran nothing")
        #expect(got == expected, "operations: opq \(got), parallel \(expected)")
        for name in expected {
            let want = FileManager.default.contents(atPath: scratch.path("parallel/" + name)) ?? Data()
            let have = FileManager.default.contents(atPath: scratch.path("opq/" + name)) ?? Data()
            func words(_ data: Data) -> [String] { data.split(separator: 0, omittingEmptySubsequences: false).dropLast().map { String(decoding: $0, as: UTF8.self) } }
            #expect(words(have) == words(want), "operation \(name): opq \(words(have)), parallel \(words(want))")
        }
        return expected.count
    }

    @Test func everyPlaceholderMatchesParallelOnAwkwardItems() throws {
        let input = Array(Self.awkwardItems.joined(separator: "\0").utf8) + [0]
        let count = try compare(["-0"], ["{}", "{.}", "{/}", "{//}", "{/.}", "{#}", "x{}y", "{1}", "{1.}", "{1/}", "{1//}", "{1/.}", "{-1}", "{2}", "a{2}b"],
                                input: input)
        #expect(count == Self.awkwardItems.count)
    }

    @Test func emptyLinesAreItemsSoSequenceNumbersMatch() throws {
        let count = try compare([], ["{#}", "{}", "{.}"], input: Array("a.x\n\nb\n\n\n c \n\n".utf8))
        #expect(count == 7)
        // No final newline: the last line is still an item.
        #expect(try compare([], ["{#}", "{}"], input: Array("a\n\nb".utf8)) == 3)
    }

    @Test func inputSourcesMakeTheCartesianProductInParallelsOrder() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("list", "f1\nf2.z/\n\n")
        let count = try compare([], ["{}", "{1}", "{2}", "{3}", "{1.}", "{2/}", "{3//}", "{-1}", "{4}", "{#}"],
                                sources: [":::", "a.b", "c/d.e", "", ":::", "x", "-y", "::::", file])
        #expect(count == 3 * 2 * 3)
        // `:::: -` reads standard input as one of the sources.
        #expect(try compare([], ["{1}", "{2}"], sources: ["::::", "-", ":::", "p", "q"], input: Array("i1\n\ni3\n".utf8)) == 6)
    }

    @Test func nItemsPerOperationAsParallelMinusN() throws {
        let input = Array("1.a\n2\ndir/3\n4\n5.b\n".utf8)
        #expect(try compare(["-n", "2"], ["x{}y", "{}", "{1}", "{2}", "{.}", "{#}", "a{2}b", "{-1}"], input: input) == 3)
        #expect(try compare(["-n", "3"], ["{}", "{3}"], sources: [":::", "a", "b", ":::", "1", "2"]) == 2)
    }

    @Test func slotNumbersMatchParallelWithOneSlot() throws {
        #expect(try compare([], ["{%}", "s{%}", "{#}"], input: Array("a\nb\nc\n".utf8), jobs: 1) == 3)
    }

    @Test func slotNumbersAreDistinctAmongOperationsRunningAtOnce() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path("out"), withIntermediateDirectories: true)
        // Each of 3 operations on 3 slots waits (bounded) until all 3 have started, so all run at once.
        let script = #"touch "$0/started-$1"; i=0; while [ "$(ls "$0" | grep -c started)" -lt 3 ] && [ $i -lt 10000 ]; do i=$((i+1)); done; printf %s "$2" > "$0/slot-$1""#
        let run = try Run("opq", ["map", "--local", "3", "--quiet", "--", "sh", "-c", script, scratch.path("out"), "{#}", "{%}", ":::", "a", "b", "c"],
                          in: scratch)
        #expect(run.finish(within: 120) == 0, "\(run.stdout)\(run.stderr)")
        let slots = (1...3).map { (try? String(contentsOfFile: scratch.path("out/slot-\($0)"), encoding: .utf8)) ?? "missing" }
        #expect(Set(slots) == ["1", "2", "3"], "\(slots)")
    }
}
