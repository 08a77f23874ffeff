import Foundation
import OPQRuntime

/// `opq-bench map`: `opq map --local 2 -- true` over N lines of input, beside `xargs -P 2 -n 1 true` and
/// GNU `parallel -j 2 true`, each run as a user would from a shell (standard input from a file, output
/// discarded), interleaved round by round so all three see the same machine load. Reports each tool's
/// median rate and CPU time (its processes and all they waited for: opq's cluster and the commands) and
/// opq's ratios to the others. Then the same three print 100 KB per command with `-k`
/// (``MapOutputBenchmark``).
enum MapBenchmark {
    struct Options {
        var lines = 2_000
        var rounds = 5
        var slots = 2
        var outputCommands = 1_000
        var output = true
        /// Rounds of the one-item runs (each tool's start-up and shutdown alone).
        var oneItemRounds = 15
        var binDirectory: String?
        /// Another build's opq (e.g. main's), run in the same rounds: before/after side by side.
        var compareDirectory: String?
        var json = false

        static let usage = """
        usage: opq-bench map [options]
          Runs `opq map --local S -- true` over N input lines, `xargs -P S -n 1 true` and GNU `parallel -j S true`
          on the same input, interleaved for R rounds, and prints each one's median rate and opq's ratios.
          Every run is the whole command, start-up included (opq starts its private cluster each time).
          Then the same commands over ONE input line, interleaved for K rounds: each tool's fixed cost (start-up
          and shutdown), and what it makes of opq's gap over N lines.
          Then output throughput: C commands each printing 100 KB (head -c 102400 FILE) through
          `opq map --local S -k`, `xargs -P S` and `parallel -k -j S`, to a file, interleaved for R rounds;
          prints each one's median time, MB/s, opq's ratios and the bytes each wrote.

          --smoke           100 lines, 20 output commands, 1 round (CI)
          --lines N         input lines (default 2000)
          --output-commands C  commands printing 100 KB each (default 1000)
          --no-output       skip the output throughput
          --one-item-rounds K  rounds of the one-item runs that show each tool's fixed cost, start-up and
                            shutdown (default 15; 0 skips them)
          --rounds R        rounds (default 5)
          --slots S         commands at a time (default 2)
          --bin-dir DIR     where opq, opq-coordinator and opq-worker are (default: beside opq-bench)
          --compare-bin-dir DIR  also run the opq of another build (e.g. main's) in the same rounds, and
                            print this build's rate over it (before/after side by side)
          --json            one JSON document instead of the table
        """

        static func parse(_ arguments: [String]) -> Options {
            var options = Options()
            var reader = ArgumentReader(arguments, command: "opq-bench map", usage: usage)
            while let argument = reader.next() {
                switch argument {
                case "--smoke": options.lines = 100; options.outputCommands = 20; options.rounds = 1; options.oneItemRounds = 3
                case "--lines": options.lines = reader.positive(for: argument)
                case "--rounds": options.rounds = reader.positive(for: argument)
                case "--slots": options.slots = reader.positive(for: argument)
                case "--output-commands": options.outputCommands = reader.positive(for: argument)
                case "--no-output": options.output = false
                case "--one-item-rounds": options.oneItemRounds = reader.nonNegative(for: argument)
                case "--bin-dir": options.binDirectory = reader.value(for: argument)
                case "--compare-bin-dir": options.compareDirectory = reader.value(for: argument)
                case "--json": options.json = true
                default: reader.unknown(argument)
                }
            }
            return options
        }
    }

    /// One tool's runs.
    struct Tool: Codable {
        let name: String
        let command: String
        /// Wall seconds of each round; empty when the tool is not installed.
        var seconds: [Double] = []
        /// CPU seconds (user + system) of each round: the command and every process it waited for.
        var cpuSeconds: [Double] = []
        /// Context switches (voluntary + involuntary) of each round: the command and every process it waited for.
        var contextSwitches: [Double] = []
        var installed = true

        var medianSeconds: Double? { MapBenchmark.median(seconds) }
        var medianCPUSeconds: Double? { MapBenchmark.median(cpuSeconds) }
        var medianContextSwitches: Double? { MapBenchmark.median(contextSwitches) }
    }

    /// The median of `values`; nil when empty.
    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    struct Report: Codable {
        let lines: Int
        let rounds: Int
        let oneItemRounds: Int
        let slots: Int
        let loadAtStart: Double?
        var loadAtEnd: Double?
        var tools: [Tool]
        /// opq's rate over xargs' (target ≥ 1.0, issue 19) and over GNU parallel's (target ≥ 5), from the medians.
        var ratioToXargs: Double?
        var ratioToParallel: Double?
        /// opq's rate over the `--compare-bin-dir` build's (nil without one).
        var ratioToCompared: Double?
        /// opq's CPU time over xargs' and over the compared build's (medians; lower is better).
        var cpuRatioToXargs: Double?
        var cpuRatioToCompared: Double?
        /// Median wall seconds of each tool over one input line (`--one-item-rounds`), by tool name: its
        /// fixed cost, start-up and shutdown. Empty when skipped.
        var oneItemSeconds: [String: Double] = [:]
        /// Output throughput (nil with --no-output).
        var output: MapOutputBenchmark.Report?
    }

    static func run(_ arguments: [String]) -> Int32 {
        let options = Options.parse(arguments)
        var standardError = StandardError()
        let binaries: Binaries
        do {
            binaries = try Binaries.locate(options.binDirectory)
        } catch {
            print("opq-bench map: \(error)", to: &standardError)
            return 2
        }
        let opq = binaries.directory + "/opq"
        guard FileManager.default.isExecutableFile(atPath: opq) else {
            print("opq-bench map: \(opq) is missing; build every product (swift build -c release)", to: &standardError)
            return 2
        }
        let input: String
        do {
            input = try inputFile(lines: options.lines, name: "opq-bench-map")
        } catch {
            print("opq-bench map: \(error)", to: &standardError)
            return 2
        }
        defer { try? FileManager.default.removeItem(atPath: input) }

        let slots = String(options.slots)
        var tools = [
            Tool(name: "opq map", command: "opq map --local \(slots) --quiet -- true"),
            Tool(name: "xargs", command: "xargs -P \(slots) -n 1 true"),
            Tool(name: "GNU parallel", command: "parallel -j \(slots) true"),
        ]
        var argvs = [
            [opq, "map", "--local", slots, "--quiet", "--", "true"],
            ["xargs", "-P", slots, "-n", "1", "true"],
            ["parallel", "-j", slots, "true"],
        ]
        if let compared = options.compareDirectory {
            tools.append(Tool(name: "opq map (compared)", command: "\(compared)/opq map --local \(slots) --quiet -- true"))
            argvs.append([compared + "/opq", "map", "--local", slots, "--quiet", "--", "true"])
        }
        var report = Report(lines: options.lines, rounds: options.rounds, oneItemRounds: options.oneItemRounds, slots: options.slots,
                            loadAtStart: ClusterReport.loadAverage(), tools: [])
        for (k, argv) in argvs.enumerated() where TimedCommand.find(argv[0]) == nil {
            tools[k].installed = false
            print("opq-bench map: \(argv[0]) is not installed; skipped (apt-get install \(argv[0]))", to: &standardError)
        }
        for round in 1...options.rounds {
            // No tool always runs right after the same other (GNU parallel's heavy rounds warm or load the machine
            // for whichever comes next).
            for k in Rounds.order(Array(argvs.indices), round: round) where tools[k].installed {
                let argv = argvs[k]
                do {
                    let measured = try TimedCommand.measure(argv, input: input)
                    tools[k].seconds.append(measured.seconds)
                    tools[k].cpuSeconds.append(measured.cpuSeconds)
                    tools[k].contextSwitches.append(Double(measured.contextSwitches))
                    print("[round \(round)] \(tools[k].name): \(Format.fixed(measured.seconds, 2)) s, "
                          + "\(Format.fixed(measured.cpuSeconds, 2)) s CPU, \(measured.contextSwitches) context switches",
                          to: &standardError)
                } catch {
                    print("opq-bench map: \(tools[k].command) failed: \(error)", to: &standardError)
                    return 1
                }
            }
        }
        report.tools = tools
        if let opqTime = tools[0].medianSeconds {
            report.ratioToXargs = tools[1].medianSeconds.map { $0 / opqTime }
            report.ratioToParallel = tools[2].medianSeconds.map { $0 / opqTime }
            if tools.count > 3 { report.ratioToCompared = tools[3].medianSeconds.map { $0 / opqTime } }
        }
        if let opqCPU = tools[0].medianCPUSeconds {
            report.cpuRatioToXargs = tools[1].medianCPUSeconds.map { opqCPU / $0 }
            if tools.count > 3 { report.cpuRatioToCompared = tools[3].medianCPUSeconds.map { opqCPU / $0 } }
        }
        if options.oneItemRounds > 0 {
            do {
                report.oneItemSeconds = try oneItem(tools: tools, argvs: argvs, rounds: options.oneItemRounds)
            } catch {
                print("opq-bench map: one item: \(error)", to: &standardError)
                return 1
            }
        }
        if options.output {
            do {
                report.output = try MapOutputBenchmark.run(opq: opq, commands: options.outputCommands,
                                                           rounds: options.rounds, slots: options.slots)
            } catch {
                print("opq-bench map: output throughput: \(error)", to: &standardError)
                return 1
            }
        }
        report.loadAtEnd = ClusterReport.loadAverage()
        print(options.json ? json(report) : text(report))
        if let failures = report.output?.failures, !failures.isEmpty {
            print("opq-bench map: \(failures.joined(separator: " and ")) did not write \(options.outputCommands) whole "
                  + "copies of the 100 KB output with -k", to: &standardError)
            return 1
        }
        return 0
    }

    /// Each tool but GNU parallel (its perl start alone is ≈ 0.2 s) over one input line, interleaved for
    /// `rounds` rounds (every other one reversed): median wall seconds by tool name.
    private static func oneItem(tools: [Tool], argvs: [[String]], rounds: Int) throws -> [String: Double] {
        let input = try inputFile(lines: 1, name: "opq-bench-map-one")
        defer { try? FileManager.default.removeItem(atPath: input) }
        let measured = tools.indices.filter { tools[$0].installed && tools[$0].name != "GNU parallel" }
        var seconds: [Int: [Double]] = [:]
        for round in 1...rounds {
            for k in Rounds.order(measured, round: round) {
                seconds[k, default: []].append(try TimedCommand.run(argvs[k], input: input))
            }
        }
        var medians: [String: Double] = [:]
        for (k, values) in seconds { medians[tools[k].name] = median(values) }
        return medians
    }

    /// A temporary file of `lines` input lines (`1` … `lines`), named after `name` and this process.
    private static func inputFile(lines: Int, name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(getpid()).txt").path
        guard FileManager.default.createFile(atPath: path, contents: Data((1...lines).map { "\($0)\n" }.joined().utf8)) else {
            throw ClusterBenchError("cannot write \(path)")
        }
        return path
    }

    private static func json(_ report: Report) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(report)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private static func text(_ report: Report) -> String {
        var table = TextTable([.init("tool", right: false), .init("command", right: false), .init("median"),
                                   .init("lines/s"), .init("opq ×"), .init("CPU"), .init("CPU/line"), .init("switches/line")])
        let opqTime = report.tools.first?.medianSeconds
        for tool in report.tools {
            guard let median = tool.medianSeconds, let cpu = tool.medianCPUSeconds else {
                table.append([tool.name, tool.command, "not installed", "", "", "", "", ""])
                continue
            }
            let ratio = opqTime.map { Format.fixed(median / $0, 2) } ?? ""
            table.append([tool.name, tool.command, Format.seconds(median), Format.rate(Double(report.lines) / median),
                          tool.name == "opq map" ? "" : ratio, Format.seconds(cpu),
                          "\(Int((cpu / Double(report.lines) * 1e6).rounded())) µs",
                          tool.medianContextSwitches.map { Format.fixed($0 / Double(report.lines), 1) } ?? ""])
        }
        var lines = [
            "opq-bench map: \(report.lines) lines, \(report.slots) at a time, median of \(report.rounds) round(s), whole commands (start-up included)",
            "load average: \(report.loadAtStart.map { Format.fixed($0, 2) } ?? "?") at start, \(report.loadAtEnd.map { Format.fixed($0, 2) } ?? "?") at end",
            table.render(),
            "targets:",
        ]
        func target(_ label: String, _ ratio: Double?, _ goal: Double) {
            let verdict = ratio.map { "\(Format.fixed($0, 2))×  \(Format.verdict($0 >= goal))" } ?? "n/a"
            lines.append("  opq map rate ≥ \(Format.fixed(goal, 1))× \(label): \(verdict)")
        }
        target("xargs -P", report.ratioToXargs, 1.0)
        target("GNU parallel", report.ratioToParallel, 5)
        if let xargs = report.tools[1].medianSeconds, let parallel = report.tools[2].medianSeconds {
            // For scale: what the parallel target asks is relative to what xargs itself reaches here.
            lines.append("  for scale: xargs -P is \(Format.fixed(parallel / xargs, 2))× GNU parallel on this machine")
        }
        if let cpu = report.cpuRatioToXargs {
            lines.append("  opq map CPU time / xargs -P: \(Format.fixed(cpu, 2))×")
        }
        if let compared = report.ratioToCompared {
            lines.append("  this build over the compared one (--compare-bin-dir): \(Format.fixed(compared, 2))× the rate, "
                         + "\(report.cpuRatioToCompared.map { Format.fixed($0, 2) } ?? "?")× the CPU time")
        }
        if let opq = report.oneItemSeconds["opq map"], let xargs = report.oneItemSeconds["xargs"] {
            let compared = report.oneItemSeconds["opq map (compared)"].map { ", the compared build \(Format.milliseconds($0))" } ?? ""
            lines.append("one item (fixed cost: start-up and shutdown), median of \(report.oneItemRounds) round(s): opq map "
                         + "\(Format.milliseconds(opq)), xargs \(Format.milliseconds(xargs))\(compared)")
            if let opqRun = report.tools[0].medianSeconds, let xargsRun = report.tools[1].medianSeconds {
                let fixed = opq - xargs
                let rest = opqRun - xargsRun - fixed
                lines.append("  opq's extra fixed cost \(Format.milliseconds(fixed)) = \(Format.fixed(fixed / opqRun * 100, 1)) % of its "
                             + "\(report.lines)-line run; the rest of the two runs' difference: \(Format.milliseconds(rest)) "
                             + "(\(Format.fixed(rest / Double(report.lines) * 1e6, 1)) µs per line)")
            }
        }
        if let output = report.output {
            lines.append("")
            lines += MapOutputBenchmark.text(output)
        }
        return lines.joined(separator: "\n")
    }
}

/// Runs a whole command the way a shell would — standard input from a file, output discarded — and
/// times it from spawn to exit. A command that exits non-zero is an error carrying its stderr tail.
enum TimedCommand {
    /// The executable for `name` on PATH, or `name` itself when it is a path; nil when absent.
    static func find(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Wall seconds of ``measure(_:input:outputPath:environment:)``.
    static func run(_ argv: [String], input: String, outputPath: String? = nil,
                    environment: [String: String] = [:]) throws -> Double {
        try measure(argv, input: input, outputPath: outputPath, environment: environment).seconds
    }

    /// Standard output goes to `outputPath` (truncated first), else to /dev/null; `environment` is added
    /// to this process's. Returns the wall seconds and the CPU seconds (user + system) of the command and of
    /// every process it waited for, and their context switches (`RUSAGE_CHILDREN` before and after: runs must
    /// not overlap).
    static func measure(_ argv: [String], input: String, outputPath: String? = nil, environment: [String: String] = [:])
        throws -> (seconds: Double, cpuSeconds: Double, contextSwitches: Int) {
        guard let executable = find(argv[0]) else { throw ClusterBenchError("\(argv[0]) not found") }
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("opq-bench-map-\(getpid()).err").path
        defer { try? FileManager.default.removeItem(atPath: errors) }
        let output = outputPath.map { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) } ?? open("/dev/null", O_WRONLY | O_CLOEXEC)
        guard output >= 0 else { throw ClusterBenchError("cannot open \(outputPath ?? "/dev/null"): \(String(cString: strerror(errno)))") }
        let errorLog = open(errors, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { close(output); close(errorLog) }
        guard errorLog >= 0 else { throw ClusterBenchError("cannot open \(errors): \(String(cString: strerror(errno)))") }
        let arguments = [executable] + argv.dropFirst()
        let before = childrenUsage()
        let started = Clock.nanoseconds()
        let child: ChildProcess
        do {
            child = try ChildProcess(executable, Array(argv.dropFirst()), environment: environment, stdin: input,
                                     stdout: .descriptor(output), stderr: .descriptor(errorLog), deathSignal: SIGKILL)
        } catch {
            throw ClusterBenchError("\(error)")
        }
        let status = child.waitForExit()
        let seconds = Clock.seconds(Clock.nanoseconds() - started)
        let after = childrenUsage()
        guard status == 0 else {
            let tail = ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").split(separator: "\n").suffix(10).joined(separator: "\n")
            throw ClusterBenchError("\(arguments.joined(separator: " ")) ended with wait status \(status):\n\(tail)")
        }
        return (seconds, after.cpuSeconds - before.cpuSeconds, after.contextSwitches - before.contextSwitches)
    }

    /// User + system seconds and context switches (voluntary + involuntary) of this process's children that
    /// have been waited for.
    private static func childrenUsage() -> (cpuSeconds: Double, contextSwitches: Int) {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return (seconds(usage.ru_utime) + seconds(usage.ru_stime), usage.ru_nvcsw + usage.ru_nivcsw)
    }
}
