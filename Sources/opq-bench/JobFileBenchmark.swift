import Foundation
import OPQCore
import OPQJobFile
import OPQWire
import SwiftProtobuf
import Yams

/// `opq-bench jobfile`: what accepting a big job file costs, phase by phase, in one process — the CLI's
/// parse (Yams composing the document, then reading it into a ``Submission``), its validation on a
/// throwaway scheduler, the wire encoding, the coordinator's decoding and the core's own submit — beside
/// GNU parallel reading and expanding the same commands (`parallel --dry-run`).
///
/// Why parallel: it is what a user with a list of 200k commands picks, and `--dry-run` is its whole
/// "accept" path (read every line, build every command) without running anything. A Slurm array
/// (`sbatch --array`) is one record expanded lazily by slurmctld and holds no per-task dependencies or
/// commands, so it would not be the same work; it is not measured.
enum JobFileBenchmark {
    static let usage = """
        usage: opq-bench jobfile [--operations N] [--json] [--smoke]

          --operations N   operations in the generated file (default 200,000; --smoke: 200)
          --json           generate the file as JSON (default YAML)
          --smoke          a tiny run that checks the benchmark works (CI)

        Every tenth operation depends on the one before it. The file is generated in a temporary
        directory and removed afterwards. GNU parallel takes ≈ 8 ms per command even with --dry-run,
        so it reads at most the first 2,000 commands and its time is scaled to N (linear: measured
        8.3–9.2 ms per command at 2,000 and 50,000). Build with -c release for figures worth quoting.
        """

    /// At most this many commands go to GNU parallel (see ``usage``).
    static let parallelLines = 2_000

    static func run(_ arguments: [String]) -> Int32 {
        var reader = ArgumentReader(arguments, command: "opq-bench jobfile", usage: usage)
        var count = 200_000
        var json = false
        var smoke = false
        while let argument = reader.next() {
            switch argument {
            case "--operations": count = reader.positive(for: argument)
            case "--json": json = true
            case "--smoke": smoke = true
            default: reader.unknown(argument)
            }
        }
        if smoke && !reader.explicit.contains("--operations") { count = 200 }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-bench-jobfile-\(getpid())")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let path = directory.appendingPathComponent(json ? "jobs.json" : "jobs.yaml").path
            let text = json ? jsonText(count) : yamlText(count)
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            let lines = directory.appendingPathComponent("commands.txt").path
            try (0..<min(count, parallelLines)).map { "true \($0)\n" }.joined().write(toFile: lines, atomically: false, encoding: .utf8)
            try report(path: path, text: text, lines: lines, count: count)
            return 0
        } catch {
            var standardError = StandardError()
            print("opq-bench jobfile: \(error)", to: &standardError)
            return 1
        }
    }

    static func report(path: String, text: String, lines: String, count: Int) throws {
        var table = TextTable([.init("phase", right: false), .init("seconds"), .init("µs / operation")])
        func row(_ name: String, _ seconds: Double) {
            table.append([name, Format.fixed(seconds, 3), Format.fixed(seconds * 1e6 / Double(count), 2)])
        }
        let (compose, _) = try timed { try Yams.compose(yaml: text) }
        let (load, jobFile) = try timed { try JobFile.load(path: path) }
        let (validate, _) = try timed { var scheduler = Scheduler(); return try scheduler.submit(jobFile.submission, at: 0) }
        let (encode, bytes) = try timed { () throws -> [UInt8] in try Opq_V1_Submit(jobFile.submission).serializedBytes() }
        let (decode, decoded) = try timed { Submission(try Opq_V1_Submit(serializedBytes: bytes)) }
        let (submit, _) = try timed { var scheduler = Scheduler(); return try scheduler.submit(decoded, at: 0) }
        row("CLI: YAML compose (Yams)", compose)
        row("CLI: read into a Submission", max(0, load - compose - validate))
        row("CLI: validate (throwaway scheduler)", validate)
        row("CLI: JobFile.load in all", load)
        row("wire: encode Submit (\(Format.grouped(bytes.count)) B)", encode)
        row("coordinator: decode Submit", decode)
        row("coordinator: core submit", submit)
        let opq = load + encode + decode + submit
        row("opq in all (no sockets, no journal)", opq)
        let parallel = try parallelDryRun(lines, count: count)
        if let parallel { row("GNU parallel --dry-run, same commands (scaled)", parallel) }
        print("accepting a \(Format.grouped(count))-operation job file (\(Format.grouped(text.utf8.count)) B):")
        print(table.render())
        if let parallel { print("opq / parallel: \(Format.fixed(opq / parallel, 2))×  (lower is better for opq)") }
    }

    /// Seconds `body` takes, once, and its result.
    static func timed<T>(_ body: () throws -> T) throws -> (Double, T) {
        let start = Clock.nanoseconds()
        let value = try body()
        return (Clock.seconds(Clock.nanoseconds() - start), value)
    }

    /// Seconds GNU parallel takes to read `lines` (scaled to `count` commands) and print each command without running it; nil without parallel.
    static func parallelDryRun(_ lines: String, count: Int) throws -> Double? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/parallel") else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/parallel")
        process.arguments = ["--will-cite", "--dry-run", "-a", lines, "{}"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let start = Clock.nanoseconds()
        try process.run()
        process.waitUntilExit()
        return Clock.seconds(Clock.nanoseconds() - start) * Double(count) / Double(min(count, parallelLines))
    }

    static func yamlText(_ count: Int) -> String {
        var text = "operations:\n"
        text.reserveCapacity(count * 64)
        for k in 0..<count {
            text += "  - name: op-\(k)\n    command: [\"true\", \"\(k)\"]\n"
            if k % 10 == 9 { text += "    after: [op-\(k - 1)]\n" }
        }
        return text
    }

    static func jsonText(_ count: Int) -> String {
        var text = "{\"operations\": [\n"
        text.reserveCapacity(count * 64)
        for k in 0..<count {
            let after = k % 10 == 9 ? ", \"after\": [\"op-\(k - 1)\"]" : ""
            text += "  {\"name\": \"op-\(k)\", \"command\": [\"true\", \"\(k)\"]\(after)}" + (k == count - 1 ? "\n" : ",\n")
        }
        return text + "]}\n"
    }
}
