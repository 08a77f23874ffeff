import Foundation
import OPQCore
import OPQJobFile
import OPQRuntime
import OPQWire
import SwiftProtobuf
import Yams

/// `opq-bench jobfile`: what accepting a big job file costs, phase by phase, in one process — the CLI's
/// parse as it is now (a JSON file in slices, checked by ``Scheduler/check(_:)``) and as it was before (one
/// Yams document for the whole file, checked by a throwaway scheduler's submit), the wire encoding, the
/// coordinator's decoding and the core's own submit — then end to end (`opq submit` against a fresh
/// coordinator, this build beside `--before-bin-dir`'s), beside GNU parallel reading and expanding the
/// same commands (`parallel --dry-run`).
///
/// Why parallel: it is what a user with a list of 200k commands picks, and `--dry-run` is its whole
/// "accept" path (read every line, build every command) without running anything. A Slurm array
/// (`sbatch --array`) is one record expanded lazily by slurmctld and holds no per-task dependencies or
/// commands, so it would not be the same work; it is not measured.
enum JobFileBenchmark {
    static let usage = """
        usage: opq-bench jobfile [--operations N] [--json] [--smoke] [--bin-dir DIR] [--before-bin-dir DIR] [--no-cluster]

          --operations N         operations in the generated file (default 200,000; --smoke: 200)
          --json                 generate the file as JSON (default YAML)
          --smoke                a tiny run that checks the benchmark works (CI)
          --bin-dir DIR          this build's opq, opq-coordinator (default: beside opq-bench)
          --before-bin-dir DIR   another build's (e.g. main's) to accept the same file beside this one
          --no-cluster           only the in-process phases, no coordinator and no `opq submit`

        Every tenth operation depends on the one before it. The file is generated in a temporary
        directory and removed afterwards. In-process phases show wall seconds and CPU seconds (the CPU
        time is what stays put on a busy machine). End to end, `opq submit FILE` runs against a fresh
        coordinator (no workers, ipc): its wall time, the CLI's CPU time and peak RSS, the coordinator's CPU and its
        resident growth per operation, at once and 1.5 s later (after the coordinator's next quiet turn,
        which gives freed heap pages back). GNU parallel takes ≈ 8 ms per command even with --dry-run, so it
        reads at most the first 2,000 commands and its time is scaled to N (linear: measured 8.3–9.2 ms
        per command at 2,000 and 50,000). Build with -c release for figures worth quoting.
        """

    /// At most this many commands go to GNU parallel (see ``usage``).
    static let parallelLines = 2_000

    static func run(_ arguments: [String]) -> Int32 {
        var reader = ArgumentReader(arguments, command: "opq-bench jobfile", usage: usage)
        var count = 200_000
        var json = false
        var smoke = false
        var binDirectory: String?
        var beforeDirectory: String?
        var cluster = true
        while let argument = reader.next() {
            switch argument {
            case "--operations": count = reader.positive(for: argument)
            case "--json": json = true
            case "--smoke": smoke = true
            case "--bin-dir": binDirectory = reader.value(for: argument)
            case "--before-bin-dir": beforeDirectory = reader.value(for: argument)
            case "--no-cluster": cluster = false
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
            let parallel = try parallelDryRun(lines, count: count)
            try report(path: path, text: text, json: json, count: count, parallel: parallel)
            if cluster {
                let executables = ["opq", "opq-coordinator", "opq-worker"]
                var builds = [("this build", Binaries(found: try BinaryDirectory.locate(executables, explicit: binDirectory)))]
                if let beforeDirectory {
                    builds.append(("before (\(beforeDirectory))", Binaries(found: try BinaryDirectory.locate(executables, explicit: beforeDirectory))))
                }
                try endToEnd(path: path, count: count, builds: builds, directory: directory, parallel: parallel)
            }
            return 0
        } catch {
            var standardError = StandardError()
            print("opq-bench jobfile: \(error)", to: &standardError)
            return 1
        }
    }

    /// The in-process phases: the CLI's reading of the file as it is now and the ways it was read before
    /// (one Yams document for the whole file; a throwaway scheduler's submit as the check), the wire, the core.
    static func report(path: String, text: String, json: Bool, count: Int, parallel: Double?) throws {
        var table = TextTable([.init("phase", right: false), .init("seconds"), .init("CPU s"), .init("CPU µs / op")])
        func row(_ name: String, _ phase: Phase) {
            table.append([name, Format.fixed(phase.wall, 3), Format.fixed(phase.cpu, 3), Format.fixed(phase.cpu * 1e6 / Double(count), 2)])
        }
        let (load, jobFile) = try timed { try JobFile.load(path: path) }
        let (check, _) = try timed { try Scheduler().check(jobFile.submission) }
        let (throwaway, _) = try timed { var scheduler = Scheduler(); return try scheduler.submit(jobFile.submission, at: 0) }
        let (encode, bytes) = try timed { () throws -> [UInt8] in try Opq_V1_Submit.encodedBytes(jobFile.submission) }
        let (wholeEncode, wholeBytes) = try timed { () throws -> [UInt8] in try Opq_V1_Submit(jobFile.submission).serializedBytes() }
        guard wholeBytes == bytes else { throw ClusterBenchError("the Submit encoded one operation at a time differs from the whole message's bytes") }
        // The coordinator's decoding of the request as `opq submit` sends it: now (a Submit read by hand
        // straight into the core's values, validated) and before (SwiftProtobuf, its validation, the conversion).
        let frames = [[1], Frames.signature, try Opq_V1_ClientRequest.encodedSubmit(1, jobFile.submission)]
        let (decode, received) = try timed { try Frames.decodeClientRequest(frames) }
        let (decodeBefore, before) = try timed { () throws -> Submission in
            Submission(try Frames.decodeRouted(frames, as: Opq_V1_ClientRequest.self).message.submit)
        }
        guard let decoded = received.submission, Opq_V1_Submit(decoded) == Opq_V1_Submit(before) else {
            throw ClusterBenchError("the Submit read by hand differs from SwiftProtobuf's decoding of it")
        }
        let (submit, _) = try timed { var scheduler = Scheduler(); return try scheduler.submit(decoded, at: 0) }
        row("CLI: JobFile.load now (\(json ? "JSON in slices" : "one YAML document"), Scheduler.check)", load)
        row("  of which the check (Scheduler.check)", check)
        if json {
            // Before: a JSON file was composed as one YAML document, as YAML files still are.
            let (compose, _) = try timed { try Yams.compose(yaml: text) }
            let (whole, _) = try timed { try JobFile.parse(text, file: path, isJSON: false) }
            row("CLI before: the file as one Yams document", whole + throwaway - check)
            row("  of which Yams compose", compose)
        }
        row("CLI before: the check on a throwaway scheduler", throwaway)
        row("wire: encode Submit one operation at a time (\(Format.grouped(bytes.count)) B)", encode)
        row("wire before: build the whole Submit message, then encode it", wholeEncode)
        row("coordinator: decode Submit (read by hand, validated)", decode)
        row("coordinator before: SwiftProtobuf, validation, conversion", decodeBefore)
        row("coordinator: core submit", submit)
        row("opq in all now (no sockets, no journal)", load + encode + decode + submit)
        if let parallel { table.append(["GNU parallel --dry-run, same commands (scaled)", Format.fixed(parallel, 3), "", ""]) }
        print("accepting a \(Format.grouped(count))-operation job file (\(Format.grouped(text.utf8.count)) B), in one process:")
        print(table.render())
        if let parallel { print("opq / parallel: \(Format.fixed((load + encode + decode + submit).wall / parallel, 2))×  (wall; lower is better for opq)") }
    }

    /// `opq submit FILE` against a fresh coordinator of each build, side by side.
    static func endToEnd(path: String, count: Int, builds: [(name: String, binaries: Binaries)], directory: URL, parallel: Double?) throws {
        var table = TextTable([.init("build", right: false), .init("accepted in s"), .init("CLI CPU s"), .init("CLI peak RSS MB"), .init("coordinator CPU s"),
                               .init("coordinator B / op"), .init("B / op 1.5 s later")])
        for (k, build) in builds.enumerated() {
            let cluster = try LocalCluster(binaries: build.binaries, parent: directory, name: "cluster-\(k)")
            defer { cluster.stop() }
            try cluster.startCoordinator()
            guard let coordinator = cluster.coordinator else { throw ClusterBenchError("the coordinator did not start") }
            let rssBefore = residentBytes(of: coordinator.pid) ?? 0
            let cpuBefore = coordinator.cpuSeconds ?? 0
            let start = Clock.nanoseconds()
            // A child of this (large) process is charged with this process's peak at its exec: the CLI's
            // own peak comes from /usr/bin/time, whose child it is, when there is one.
            let rssFile = directory.appendingPathComponent("submit-\(k).rss").path
            let command = [build.binaries.found.path(of: "opq"), "submit", path, "--coordinator", cluster.clientsEndpoint]
            let timed = FileManager.default.isExecutableFile(atPath: "/usr/bin/time")
            let submit = timed
                ? try ChildProcess("/usr/bin/time", ["-f", "%M %U %S", "-o", rssFile] + command, name: "submit-\(k)", directory: directory)
                : try ChildProcess(command[0], Array(command.dropFirst()), name: "submit-\(k)", directory: directory)
            let status = submit.waitForExit()
            let seconds = Clock.seconds(Clock.nanoseconds() - start)
            guard status == 0 else {
                let log = (try? String(contentsOf: directory.appendingPathComponent("submit-\(k).log"), encoding: .utf8)) ?? ""
                throw ClusterBenchError("opq submit exited with status \(status)\n\(log)")
            }
            let perOperation = Double((residentBytes(of: coordinator.pid) ?? 0) - rssBefore) / Double(count)
            // The coordinator gives freed heap pages back at its first quiet turn after a big submission
            // (its heartbeat comes each second): what stays resident is read again after that.
            usleep(1_500_000)
            let settled = Double((residentBytes(of: coordinator.pid) ?? 0) - rssBefore) / Double(count)
            // /usr/bin/time's "PEAK_KB USER_S SYSTEM_S" (the CLI's CPU: what stays put on a busy machine).
            let timeReport = (try? String(contentsOfFile: rssFile, encoding: .utf8))?.split(whereSeparator: \.isWhitespace) ?? []
            let kilobytes = timeReport.first.flatMap { Int($0) } ?? submit.peakResidentKilobytes ?? 0
            let cliCPU = timeReport.count == 3 ? Double(timeReport[1]).flatMap { user in Double(timeReport[2]).map { user + $0 } } : nil
            table.append([build.name, Format.fixed(seconds, 3), cliCPU.map { Format.fixed($0, 2) } ?? "", Format.fixed(Double(kilobytes) / 1024, 1),
                          Format.fixed((coordinator.cpuSeconds ?? 0) - cpuBefore, 3), Format.fixed(perOperation, 0),
                          Format.fixed(settled, 0)])
        }
        if let parallel { table.append(["GNU parallel --dry-run (scaled)", Format.fixed(parallel, 3), "", "", "", "", ""]) }
        print("\nopq submit FILE, end to end (fresh coordinator, no workers):")
        print(table.render())
    }

    /// Resident bytes of process `pid` (`/proc/PID/statm`), nil where unreadable.
    static func residentBytes(of pid: pid_t) -> Int? {
        guard let statm = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return nil }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Wall and CPU seconds of one phase.
    struct Phase {
        var wall: Double
        var cpu: Double

        static func + (lhs: Phase, rhs: Phase) -> Phase { Phase(wall: lhs.wall + rhs.wall, cpu: lhs.cpu + rhs.cpu) }
        static func - (lhs: Phase, rhs: Phase) -> Phase { Phase(wall: lhs.wall - rhs.wall, cpu: lhs.cpu - rhs.cpu) }
    }

    /// This process's CPU seconds so far (user + system, every thread).
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// Wall and CPU seconds `body` takes, once, and its result.
    static func timed<T>(_ body: () throws -> T) throws -> (Phase, T) {
        let start = Clock.nanoseconds(), cpu = cpuSeconds()
        let value = try body()
        return (Phase(wall: Clock.seconds(Clock.nanoseconds() - start), cpu: cpuSeconds() - cpu), value)
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
