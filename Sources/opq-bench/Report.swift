import Foundation
import OPQCore

/// Everything one run measured, with the machine it ran on; printed as tables or as JSON.
struct Report: Codable {
    /// Facts about the machine and the build.
    struct Machine: Codable {
        var cpu: String
        var activeCores: Int
        var cores: Int
        var memoryBytes: UInt64
        var os: String
        var build: String
        var compiler: String

        static func current() -> Machine {
            let info = ProcessInfo.processInfo
            let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
            let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
                .flatMap { $0.split(separator: ":", maxSplits: 1).last }
                .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
            #if DEBUG
            let build = "debug (figures are not meaningful: use -c release)"
            #else
            let build = "release"
            #endif
            #if compiler(>=6.3)
            let compiler = "Swift 6.3 or later"
            #elseif compiler(>=6.0)
            let compiler = "Swift 6.0–6.2"
            #else
            let compiler = "Swift before 6.0"
            #endif
            return Machine(cpu: model, activeCores: info.activeProcessorCount, cores: info.processorCount,
                           memoryBytes: info.physicalMemory, os: info.operatingSystemVersionString,
                           build: build, compiler: compiler)
        }
    }

    /// A target and whether the run met it.
    struct Target: Codable {
        var name: String
        var goal: String
        var measured: String
        var passed: Bool
    }

    var machine: Machine
    var workers: Int
    var slotsPerWorker: Int
    var reportsStarted: Bool
    var memorySource: String
    var throughput: [ThroughputRow]
    var memory: [MemoryRow]
    var targets: [Target] = []

    static let rateGoal = 1_000_000.0
    static let flatnessGoal = 1.5
    static let bytesGoal = 400.0

    /// Judges the targets from the rows measured; a target with nothing measured is left out.
    mutating func judge() {
        targets = []
        let rates = throughput.filter { $0.shape == .independent }.compactMap(\.core?.operationsPerSecond)
        if let worst = rates.min() {
            targets.append(Target(name: "independent submit+dispatch+finish rate", goal: "≥ 1,000,000 ops/s",
                                  measured: "lowest \(Format.rate(worst)) ops/s", passed: worst >= Report.rateGoal))
        }
        for shape in Shape.allCases {
            let rows = throughput.filter { $0.shape == shape }
            guard rows.count >= 2 else { continue }
            let skipped = rows.filter { $0.core == nil }.map { Format.size($0.size) }
            let worst = rows.compactMap(\.core?.flatness).max() ?? 1
            let span = "\(Format.size(rows.first!.size))→\(Format.size(rows.last!.size))"
            let measured = skipped.isEmpty ? "worst \(Format.fixed(worst, 2))×" : "\(skipped.joined(separator: ", ")) skipped (budget)"
            targets.append(Target(name: "flat cost per op, \(shape.rawValue) \(span)", goal: "≤ 1.5×",
                                  measured: measured, passed: skipped.isEmpty && worst <= Report.flatnessGoal))
        }
        let bytes = memory.compactMap(\.memory?.bytesPerOperation)
        if let worst = bytes.max() {
            targets.append(Target(name: "bytes per pending operation", goal: "≤ 400 B",
                                  measured: "worst \(Format.fixed(worst, 0)) B", passed: worst <= Report.bytesGoal))
        }
    }

    /// The report as aligned tables.
    func text() -> String {
        var out: [String] = []
        out.append("opq-bench — OPQCore scheduler vs Foundation OperationQueue")
        out.append("  machine: \(machine.cpu), \(machine.activeCores) of \(machine.cores) cores active, "
                   + "\(Format.bytes(machine.memoryBytes)) RAM, \(machine.os)")
        out.append("  build:   \(machine.build), \(machine.compiler)")
        out.append("  cluster: \(workers) simulated workers × \(slotsPerWorker) slots = \(workers * slotsPerWorker) slots "
                   + "(Foundation: maxConcurrentOperationCount = \(workers * slotsPerWorker))")
        out.append("  loop:    each dispatch is reported " + (reportsStarted ? "started, then finished(succeeded)" : "finished(succeeded) only")
                   + "; effects taken after every event, counted, dropped")
        out.append("  work:    handler \"noop\" with an empty payload; operations named o<k> where referenced; one batch per run")
        out.append("")
        out.append(throughputTable())
        out.append("")
        out.append("  time = best run, from submit to the last finish (core) / from addOperations to waitUntilAllOperationsAreFinished")
        out.append("  (Foundation; operations and addDependency built before the clock). flat = ns/op ÷ ns/op at the smallest size.")
        out.append("  Foundation is capped at 20k for chain (1k with --smoke) and 100k otherwise, and skipped when its time budget would be overrun.")
        if !memory.isEmpty {
            out.append("")
            out.append(memoryTable())
        }
        if !targets.isEmpty {
            out.append("")
            var table = TextTable([.init("target", right: false), .init("goal", right: false),
                                   .init("measured", right: false), .init("verdict", right: false)])
            for target in targets { table.append([target.name, target.goal, target.measured, Format.verdict(target.passed)]) }
            out.append(table.render())
        }
        return out.joined(separator: "\n")
    }

    private func throughputTable() -> String {
        var table = TextTable([
            .init("shape", right: false), .init("ops"), .init("edges"), .init("core time"), .init("core ops/s"),
            .init("ns/op"), .init("submit ns/op"), .init("flat"), .init("effects/op"),
            .init("Foundation time"), .init("Foundation ops/s"), .init("core/Fdn"),
        ])
        for row in throughput {
            var cells = [row.shape.rawValue, Format.size(row.size), Format.grouped(row.edges)]
            if let core = row.core {
                let rate = Format.rate(core.operationsPerSecond)
                    + (row.shape == .independent ? " " + Format.verdict(core.operationsPerSecond >= Report.rateGoal) : "")
                let flat = core.flatness.map { abs($0 - 1) < 1e-12 ? "1.00 base" : Format.fixed($0, 2) + " " + Format.verdict($0 <= Report.flatnessGoal) } ?? "—"
                cells += [Format.seconds(core.seconds), rate, Format.fixed(core.nanosecondsPerOperation, 0),
                          Format.fixed(core.submitNanosecondsPerOperation, 0), flat, Format.fixed(core.effectsPerOperation, 2)]
            } else {
                let estimate = row.corePredictedSeconds.map { "est. " + Format.seconds($0) } ?? ""
                cells += [row.coreStatus ?? "—", estimate, "", "", "MISS", ""]
            }
            if let foundation = row.foundation {
                cells += [Format.seconds(foundation.seconds), Format.rate(foundation.operationsPerSecond),
                          row.speedup.map { Format.fixed($0, 1) + "×" } ?? "—"]
            } else {
                cells += [row.foundationStatus ?? "—", "", ""]
            }
            table.append(cells)
        }
        return table.render()
    }

    private func memoryTable() -> String {
        var table = TextTable([.init("pending (no workers)", right: false), .init("ops"), .init("bytes/op"),
                               .init("of which effects buffer"), .init("≤ 400 B")])
        for row in memory {
            if let memory = row.memory {
                table.append([row.shape.rawValue, Format.size(row.size), Format.fixed(memory.bytesPerOperation, 0),
                              Format.fixed(memory.effectsBufferPerOperation, 0),
                              Format.verdict(memory.bytesPerOperation <= Report.bytesGoal)])
            } else {
                table.append([row.shape.rawValue, Format.size(row.size), "n/a", "", ""])
            }
        }
        return table.render() + "\n  bytes/op = growth of \(memorySource) over submit + takeEffects, ÷ ops; the effects "
            + "buffer is the capacity\n  the core keeps after takeEffects() (MemoryLayout<Effect>.stride = \(MemoryLayout<Effect>.stride) B)."
    }

    /// The report as a JSON document.
    func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
