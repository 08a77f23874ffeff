import Foundation
import OPQRuntime

/// `opq-bench start`: what one short `opq` command costs from exec to exit — `opq status` against a
/// running coordinator, and `opq --version` (no connection) — beside `/bin/true` (the cost of any
/// process) run in the same rounds, interleaved. Per run: wall time, CPU time (user + system, from the
/// kernel's accounting of the reaped child) and minor page faults (most of a Swift program's start is
/// the dynamic linker's relocations, paid in page faults). Target (issue 19): `opq status` ≤ 5 ms.
enum StartBenchmark {
    struct Options {
        var rounds = 50
        var binDirectory: String?
        var compareDirectory: String?
        var json = false

        static let usage = """
        usage: opq-bench start [options]
          Starts a private opq-coordinator, then runs `/bin/true`, `opq --version` and `opq status` (against
          that coordinator) one after another for R rounds (every other round in reverse order), and prints each one's median wall time, CPU time
          (user + system) and minor page faults, and opq status's ratios to /bin/true.

          --smoke           5 rounds (CI)
          --rounds R        rounds (default 50)
          --bin-dir DIR     where opq and opq-coordinator are (default: beside opq-bench)
          --compare-bin-dir DIR  also run the opq of another build (e.g. main's, or an installed one) in the
                            same rounds (before/after side by side)
          --json            one JSON document instead of the table
        """

        static func parse(_ arguments: [String]) -> Options {
            var options = Options()
            var reader = ArgumentReader(arguments, command: "opq-bench start", usage: usage)
            while let argument = reader.next() {
                switch argument {
                case "--smoke": options.rounds = 5
                case "--rounds": options.rounds = reader.positive(for: argument)
                case "--bin-dir": options.binDirectory = reader.value(for: argument)
                case "--compare-bin-dir": options.compareDirectory = reader.value(for: argument)
                case "--json": options.json = true
                default: reader.unknown(argument)
                }
            }
            return options
        }
    }

    /// One command's runs.
    struct Command: Codable {
        let name: String
        let argv: [String]
        var wallSeconds: [Double] = []
        var cpuSeconds: [Double] = []
        var minorFaults: [Double] = []

        var medianWall: Double? { MapBenchmark.median(wallSeconds) }
        var medianCPU: Double? { MapBenchmark.median(cpuSeconds) }
        var medianFaults: Double? { MapBenchmark.median(minorFaults) }
    }

    struct Report: Codable {
        let rounds: Int
        let loadAtStart: Double?
        var loadAtEnd: Double?
        var commands: [Command]
    }

    /// The target of issue 19 for `opq status`, in seconds.
    static let target = 0.005

    static func run(_ arguments: [String]) -> Int32 {
        let options = Options.parse(arguments)
        var standardError = StandardError()
        let binaries: Binaries
        do {
            binaries = try Binaries.locate(options.binDirectory)
        } catch {
            print("opq-bench start: \(error)", to: &standardError)
            return 2
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("opq-bench-start-\(getpid())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let cluster: LocalCluster
        do {
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            cluster = try LocalCluster(binaries: binaries, parent: scratch, name: "cluster")
            try cluster.startCoordinator()
        } catch {
            print("opq-bench start: cannot start a coordinator: \(error)", to: &standardError)
            return 1
        }
        defer { cluster.stop() }
        let endpoint = cluster.clientsEndpoint
        var commands = [
            Command(name: "/bin/true", argv: ["/bin/true"]),
            Command(name: "opq --version", argv: [binaries.directory + "/opq", "--version"]),
            Command(name: "opq status", argv: [binaries.directory + "/opq", "status", "--coordinator", endpoint]),
        ]
        if let compared = options.compareDirectory {
            commands.append(Command(name: "opq --version (compared)", argv: [compared + "/opq", "--version"]))
            commands.append(Command(name: "opq status (compared)", argv: [compared + "/opq", "status", "--coordinator", endpoint]))
        }
        var report = Report(rounds: options.rounds, loadAtStart: ClusterReport.loadAverage(), commands: [])
        for round in 1...options.rounds {
            // Every other round the other way round: a command run right after another opq command finds
            // the coordinator warm and takes less wall time (measured: 9 ms of 35), so no build is always
            // the first or the second of the two.
            for k in Rounds.order(Array(commands.indices), round: round) {
                do {
                    let run = try measure(commands[k].argv)
                    commands[k].wallSeconds.append(run.wall)
                    commands[k].cpuSeconds.append(run.cpu)
                    commands[k].minorFaults.append(run.faults)
                } catch {
                    print("opq-bench start: \(commands[k].name) failed: \(error)", to: &standardError)
                    return 1
                }
            }
        }
        report.commands = commands
        report.loadAtEnd = ClusterReport.loadAverage()
        print(options.json ? json(report) : text(report))
        return 0
    }

    /// Runs `argv` to its end (output discarded); its wall time, CPU time and minor faults. The CPU
    /// and faults are the kernel's account of reaped children, read before and after (this benchmark
    /// reaps no other child meanwhile: the coordinator runs until the end).
    static func measure(_ argv: [String]) throws -> (wall: Double, cpu: Double, faults: Double) {
        var before = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &before)
        let started = Clock.nanoseconds()
        let child: ChildProcess
        do {
            child = try ChildProcess(argv[0], Array(argv.dropFirst()), stdout: .null, deathSignal: SIGKILL)
        } catch {
            throw ClusterBenchError("\(error)")
        }
        let status = child.waitForExit()
        let wall = Clock.seconds(Clock.nanoseconds() - started)
        guard status == 0 else { throw ClusterBenchError("\(argv.joined(separator: " ")) ended with wait status \(status)") }
        var after = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &after)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        let cpu = seconds(after.ru_utime) + seconds(after.ru_stime) - seconds(before.ru_utime) - seconds(before.ru_stime)
        return (wall, cpu, Double(after.ru_minflt - before.ru_minflt))
    }

    private static func json(_ report: Report) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(report)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private static func text(_ report: Report) -> String {
        var table = TextTable([.init("command", right: false), .init("wall"), .init("CPU"), .init("minor faults"),
                               .init("wall ÷ /bin/true")])
        let reference = report.commands.first?.medianWall
        for command in report.commands {
            table.append([command.name, command.medianWall.map(Format.seconds) ?? "?", command.medianCPU.map(Format.seconds) ?? "?",
                          command.medianFaults.map { Format.grouped(Int($0)) } ?? "?",
                          zip(command.medianWall, reference).map { Format.fixed($0 / $1, 1) + "×" } ?? ""])
        }
        var lines = [
            "opq-bench start: one command from exec to exit, median of \(report.rounds) interleaved round(s)",
            "load average: \(report.loadAtStart.map { Format.fixed($0, 2) } ?? "?") at start, \(report.loadAtEnd.map { Format.fixed($0, 2) } ?? "?") at end",
            table.render(),
            "targets:",
        ]
        if let status = report.commands.first(where: { $0.name == "opq status" }), let wall = status.medianWall, let cpu = status.medianCPU {
            // CPU time is what a loaded machine does not inflate; wall time is what a user waits.
            lines.append("  opq status ≤ \(Format.seconds(target)) CPU: \(Format.seconds(cpu))  \(Format.verdict(cpu <= target))")
            lines.append("  opq status ≤ \(Format.seconds(target)) wall: \(Format.seconds(wall))  \(Format.verdict(wall <= target))"
                         + " (wall time needs an idle machine)")
        }
        if let compared = report.commands.first(where: { $0.name == "opq status (compared)" })?.medianCPU,
           let cpu = report.commands.first(where: { $0.name == "opq status" })?.medianCPU {
            lines.append("  this build's opq status CPU over the compared one's (--compare-bin-dir): \(Format.fixed(cpu / compared, 2))×")
        }
        return lines.joined(separator: "\n")
    }
}

/// `zip` of two optionals: both values, or nil.
private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
