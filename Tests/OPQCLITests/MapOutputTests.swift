import Foundation
import Testing

/// `opq map` prints the commands' output as GNU parallel does: complete, byte for byte, grouped per
/// operation (or in input order with -k, tagged with --tag, line by line with --line-buffer), stderr to
/// stderr — and with bounded memory in the worker, the coordinator and the CLI however much is written.
@Suite(.serialized) struct MapOutputTests {
    /// A coordinator and one worker on ipc:// in `scratch`; stopped by the caller.
    private struct Cluster {
        let coordinator: Run
        let worker: Run
        let environment: [String: String]

        init(_ scratch: Scratch, slots: Int = 2) throws {
            let clients = "ipc://\(scratch.path("clients.sock"))"
            let workers = "ipc://\(scratch.path("workers.sock"))"
            coordinator = try Run("opq-coordinator", ["--workers-endpoint", workers, "--clients-endpoint", clients,
                                                      "--state", scratch.path("state")], in: scratch)
            worker = try Run("opq-worker", ["--coordinator", workers, "--slots", "\(slots)", "--name", "w1"], in: scratch)
            environment = ["OPQ_COORDINATOR": clients]
        }

        func stop() {
            worker.stop()
            coordinator.stop()
        }
    }

    /// The peak resident set of a live process (`VmHWM` in /proc/PID/status), in KiB.
    private func peakKilobytes(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }

    @Test func keepOrderSha256sumOverAThousandFilesEqualsParallelByteForByte() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path("files"), withIntermediateDirectories: true)
        var names: [String] = []
        for k in 1...1_000 {
            let name = scratch.path("files/f\(k).txt")
            FileManager.default.createFile(atPath: name, contents: Data("file \(k)\n".utf8))
            names.append(name)
        }
        let input = try scratch.write("input", names.joined(separator: "\n") + "\n")
        let opq = try Run("opq", ["map", "--local", "2", "-k", "--", "sha256sum", "{}"], in: scratch, input: input)
        #expect(opq.finish(within: 300) == 0, "opq: \(opq.stderr)")
        let parallel = try Run("/usr/bin/parallel", ["--will-cite", "-k", "sha256sum"], in: scratch,
                               environment: ["HOME": scratch.path("")], input: input)
        #expect(parallel.finish(within: 300) == 0, "parallel (install it with scripts/bootstrap.sh): \(parallel.stderr)")
        #expect(parallel.stdoutBytes.count > 1_000 * 64, "parallel printed \(parallel.stdoutBytes.count) bytes")
        #expect(opq.stdoutBytes == parallel.stdoutBytes, "opq printed \(opq.stdoutBytes.count) bytes, parallel \(parallel.stdoutBytes.count)")
        #expect(opq.stderr.contains("1000 operations"), "the summary goes to stderr: \(opq.stderr)")
    }

    @Test func twoHundredMegabytesArriveByteExactWithBoundedMemory() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch, slots: 1)
        defer { cluster.stop() }
        let copy = scratch.path("written")
        let input = try scratch.write("input", copy + "\n")
        // GNU time forks opq and reports its peak resident set: a child this test process spawned itself
        // would be charged the test process's own peak (Linux records the old address space's high-water
        // mark at exec, and a vfork'ed child's old address space is the parent's).
        let rss = scratch.path("opq.rss")
        let opq = try Run("/usr/bin/time", ["-o", rss, "-f", "%M", Executables.path("opq"),
                                            "map", "--", "sh", "-c", "head -c 200000000 /dev/urandom | tee \"$0\"", "{}"], in: scratch,
                          environment: cluster.environment, input: input)
        #expect(opq.finish(within: 300) == 0, "opq: \(opq.stderr)")
        let written = try Data(contentsOf: URL(fileURLWithPath: copy))
        #expect(written.count == 200_000_000)
        let printed = opq.stdoutBytes
        #expect(printed.count == written.count)
        #expect(printed.elementsEqual(written), "the printed output differs from what the command wrote")

        let limit = 150 * 1024
        let coordinator = peakKilobytes(cluster.coordinator.pid)
        let worker = peakKilobytes(cluster.worker.pid)
        #expect(coordinator != nil && coordinator! < limit, "coordinator peak RSS \(coordinator ?? -1) KiB")
        #expect(worker != nil && worker! < limit, "worker peak RSS \(worker ?? -1) KiB")
        let cli = Int(((try? String(contentsOfFile: rss, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(cli != nil && cli! < limit, "opq peak RSS \(cli ?? -1) KiB")
    }

    @Test func binaryOutputTagKeepOrderAndStderrAreKeptApart() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let input = try scratch.write("input", "b\na\nc\n")
        // Every byte value, then a line per stream; the third item is slowest, the first fastest.
        let script = #"printf "$(printf '\\%03o' $(seq 0 255))"; echo; echo "out $0"; echo "err $0" >&2"#
        let binary = try Run("opq", ["map", "--local", "3", "-k", "--", "sh", "-c", script, "{}"], in: scratch, input: input)
        #expect(binary.finish(within: 120) == 0, "\(binary.stderr)")
        let every = Array(0...255).map(UInt8.init)
        var expected: [UInt8] = []
        for item in ["b", "a", "c"] { expected += every + Array("\nout \(item)\n".utf8) }
        #expect(binary.stdoutBytes == expected, "got \(binary.stdoutBytes.count) bytes")
        #expect(!binary.stdout.contains("err "), "stderr stays off stdout")
        for item in ["b", "a", "c"] { #expect(binary.stderr.contains("err \(item)\n"), "\(binary.stderr)") }

        let tagged = try Run("opq", ["map", "--local", "2", "-k", "--tag", "--", "sh", "-c", "echo one $0; printf 'two'", "{}"],
                             in: scratch, input: input)
        #expect(tagged.finish(within: 120) == 0, "\(tagged.stderr)")
        #expect(tagged.stdout == "b\tone b\nb\ttwoa\tone a\na\ttwoc\tone c\nc\ttwo", "\(tagged.stdout)")
    }

    @Test func lineBufferPassesLinesOnWhileTheCommandRuns() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let fifo = scratch.path("go")
        #expect(mkfifo(fifo, 0o600) == 0)
        let input = try scratch.write("input", fifo + "\n")
        let opq = try Run("opq", ["map", "--local", "1", "--line-buffer", "--", "sh", "-c", #"echo first; read line < "$0"; echo second"#, "{}"],
                          in: scratch, input: input)
        defer { opq.stop() }
        #expect(opq.waitForOutput("first\n", within: 60), "the first line comes while the command still runs: \(opq.stderr)")
        #expect(!opq.stdout.contains("second"))
        let writer = open(fifo, O_WRONLY)
        #expect(writer >= 0)
        _ = "go\n".withCString { write(writer, $0, 3) }
        close(writer)
        #expect(opq.finish(within: 60) == 0, "\(opq.stderr)")
        #expect(opq.stdout == "first\nsecond\n", "\(opq.stdout)")
    }

    @Test func submitWaitPrintsFailedOutputAndLogsReturnsTheWholeOutput() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try Cluster(scratch)
        defer { cluster.stop() }
        // 300,000 bytes: far more than the 64 KiB tail a finish report carries.
        let job = try scratch.write("job.yaml", """
            operations:
              - name: big
                shell: seq 1 52000
              - name: bad
                shell: echo "half done"; echo "boom" >&2; exit 3
            """)
        let submit = try Run("opq", ["submit", job, "--wait", "--output", "failed"], in: scratch, environment: cluster.environment)
        #expect(submit.finish(within: 120) == 1, "\(submit.stdout)\(submit.stderr)")
        #expect(submit.stdout.contains("--- bad (op-2) ---\nhalf done\n"), "\(submit.stdout)")
        #expect(!submit.stdout.contains("\n51999\n"), "a succeeded operation's output is not printed with --output failed")
        #expect(submit.stderr.contains("--- bad (op-2) stderr ---\nboom\n"), "\(submit.stderr)")

        let logs = try Run("opq", ["logs", "op-1"], in: scratch, environment: cluster.environment)
        #expect(logs.finish(within: 60) == 0, "\(logs.stderr)")
        let expected = (1...52000).map(String.init).joined(separator: "\n") + "\n"
        #expect(logs.stdoutBytes.count == expected.utf8.count)
        #expect(logs.stdout == expected, "opq logs returns the whole output, not its tail")
        #expect(logs.stderr.isEmpty, "\(logs.stderr)")
    }
}
