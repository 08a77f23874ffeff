import Foundation

/// The output half of `opq-bench map`: N commands each printing the same 100 KB file
/// (`head -c 102400 FILE`, the file's path being every input line), through `opq map -k`,
/// GNU `parallel -k` and `xargs -P`, standard output to a file, interleaved round by round. Reports each
/// tool's median wall time and MB/s, opq's ratio to the others, and what each wrote: opq and
/// `parallel -k` must write exactly N copies of the file; xargs -P does not group output, so its copies
/// may be interleaved (its byte count is reported beside whether the copies came out whole).
enum MapOutputBenchmark {
    static let bytesPerCommand = 102_400

    /// One tool's runs.
    struct Tool: Codable {
        let name: String
        let command: String
        var installed = true
        /// Wall seconds of each round.
        var seconds: [Double] = []
        /// Bytes written in each round.
        var bytes: [Int] = []
        /// Whether every round's output was N whole copies of the file, one after another.
        var intact = true
        /// Whether this tool promises grouped output (opq -k, parallel -k): a short or mixed output is a failure.
        let grouped: Bool

        var medianSeconds: Double? { MapBenchmark.median(seconds) }
    }

    struct Report: Codable {
        let commands: Int
        let bytesPerCommand: Int
        let rounds: Int
        let slots: Int
        var tools: [Tool]
        /// opq's MB/s over xargs' and over GNU parallel's, from the medians.
        var ratioToXargs: Double?
        var ratioToParallel: Double?

        var expectedBytes: Int { commands * bytesPerCommand }
        /// A tool that promises grouped output wrote something else than N whole copies.
        var failures: [String] {
            tools.filter { $0.grouped && $0.installed && !$0.intact }.map(\.name)
        }
    }

    /// Runs the measurement; `opq` is the opq executable. Progress and problems go to standard error.
    static func run(opq: String, commands: Int, rounds: Int, slots: Int) throws -> Report {
        var standardError = StandardError()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-bench-map-output-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Numbered 8-byte lines, so a copy cut by another command's bytes does not compare equal.
        let blob = Data((0..<(bytesPerCommand / 8)).map { String(format: "%07d\n", $0) }.joined().utf8)
        let blobPath = directory + "/100k"
        let input = directory + "/input"
        let output = directory + "/output"
        // GNU parallel writes ~/.parallel (the citation notice, its cache): a private HOME keeps the user's alone.
        let home = directory + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: blobPath, contents: blob),
              FileManager.default.createFile(atPath: input, contents: Data(String(repeating: blobPath + "\n", count: commands).utf8))
        else { throw ClusterBenchError("cannot write the input files in \(directory)") }

        let s = String(slots)
        let size = String(bytesPerCommand)
        var tools = [
            Tool(name: "opq map", command: "opq map --local \(s) -k --quiet -- head -c \(size)", grouped: true),
            Tool(name: "xargs", command: "xargs -P \(s) -n 1 head -c \(size)", grouped: false),
            Tool(name: "GNU parallel", command: "parallel -k -j \(s) head -c \(size)", grouped: true),
        ]
        let argvs = [
            [opq, "map", "--local", s, "-k", "--quiet", "--", "head", "-c", size],
            ["xargs", "-P", s, "-n", "1", "head", "-c", size],
            ["parallel", "--will-cite", "-k", "-j", s, "head", "-c", size],
        ]
        for (k, argv) in argvs.enumerated() where TimedCommand.find(argv[0]) == nil {
            tools[k].installed = false
            print("opq-bench map: \(argv[0]) is not installed; its output column is skipped (apt-get install \(argv[0]))", to: &standardError)
        }
        for round in 1...rounds {
            for (k, argv) in argvs.enumerated() where tools[k].installed {
                let seconds = try TimedCommand.run(argv, input: input, outputPath: output, environment: ["HOME": home])
                let (bytes, intact) = try check(output, against: blob, copies: commands)
                tools[k].seconds.append(seconds)
                tools[k].bytes.append(bytes)
                tools[k].intact = tools[k].intact && intact
                print("[output round \(round)] \(tools[k].name): \(Format.fixed(seconds, 2)) s, \(Format.grouped(bytes)) bytes"
                      + (intact ? "" : ", not \(commands) whole copies"), to: &standardError)
            }
        }
        var report = Report(commands: commands, bytesPerCommand: bytesPerCommand, rounds: rounds, slots: slots, tools: tools)
        if let opqTime = tools[0].medianSeconds {
            report.ratioToXargs = tools[1].medianSeconds.map { $0 / opqTime }
            report.ratioToParallel = tools[2].medianSeconds.map { $0 / opqTime }
        }
        return report
    }

    /// The size of `path`, and whether it is exactly `copies` copies of `blob` back to back.
    static func check(_ path: String, against blob: Data, copies: Int) throws -> (bytes: Int, intact: Bool) {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ClusterBenchError("cannot read \(path)") }
        defer { try? handle.close() }
        var bytes = 0
        var intact = true
        while let chunk = try handle.read(upToCount: blob.count), !chunk.isEmpty {
            bytes += chunk.count
            if intact && chunk != blob { intact = false }
        }
        return (bytes, intact && bytes == copies * blob.count)
    }

    /// The table and its notes, for `opq-bench map`'s text report.
    static func text(_ report: Report) -> [String] {
        var table = TextTable([.init("tool", right: false), .init("command", right: false), .init("median"),
                               .init("MB/s"), .init("opq ×"), .init("bytes (last round)"), .init("output", right: false)])
        let opqTime = report.tools.first?.medianSeconds
        let megabytes = Double(report.expectedBytes) / 1_000_000
        for tool in report.tools {
            guard tool.installed, let median = tool.medianSeconds else {
                table.append([tool.name, tool.command, "not installed", "", "", "", "skipped"])
                continue
            }
            let ratio = tool.name == "opq map" ? "" : opqTime.map { Format.fixed(median / $0, 2) } ?? ""
            let verdict = tool.intact ? "\(Format.grouped(report.commands)) whole copies"
                : tool.grouped ? "WRONG (want \(Format.grouped(report.expectedBytes)) bytes, whole copies)"
                : "copies interleaved (not grouped)"
            table.append([tool.name, tool.command, Format.seconds(median), Format.fixed(megabytes / median, 1), ratio,
                          tool.bytes.last.map(Format.grouped) ?? "", verdict])
        }
        return [
            "output throughput: \(Format.grouped(report.commands)) commands × \(Format.grouped(report.bytesPerCommand)) bytes "
                + "(= \(Format.fixed(megabytes, 1)) MB) to a file, \(report.slots) at a time, median of \(report.rounds) round(s)",
            table.render(),
            "  each input line is the path of one 100 KB file, appended to the command; opq × = opq map's MB/s over the tool's.",
        ]
    }
}
