import ArgumentParser
import Foundation
import OPQCore

/// The per-operation options `opq add` and `opq map` share, checked the way job files are.
struct OperationOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The queue to add to.", valueName: "queue"))
    var queue = "default"

    @Option(help: ArgumentHelp("veryLow, low, normal, high, veryHigh, or an integer.", valueName: "priority"))
    var priority = "normal"

    @Option(help: ArgumentHelp("background, utility, default, userInitiated or userInteractive (niceness on the worker).", valueName: "qos"))
    var qos = "default"

    @Option(help: ArgumentHelp("Attempts after a failed one.", valueName: "n"))
    var retries = 0

    @Option(help: ArgumentHelp("Seconds an attempt may run before it is killed and fails.", valueName: "seconds"))
    var timeout: Double?

    @Option(help: ArgumentHelp("The working directory of the command (default: the current directory).", valueName: "dir"))
    var cwd: String?

    @Option(help: ArgumentHelp("CPUs it needs on one worker (1 to \(Limits.maxCpus); default 1).", valueName: "n"))
    var cpus = 1

    @Option(help: ArgumentHelp("Memory it needs on one worker, e.g. 2G (K, M, G, T = powers of 1024; default none).", valueName: "size"))
    var memory: String?

    func validate() throws {
        if !(0...Limits.maxRetries).contains(retries) { throw ValidationError("--retries must be from 0 to \(Limits.maxRetries)") }
        if let timeout, !Limits.isValidDuration(timeout, positive: true) {
            throw ValidationError("--timeout must be \(Limits.durationRange(positive: true))")
        }
        if queue.utf8.count > Limits.maxNameBytes { throw ValidationError("--queue must be at most \(Limits.maxNameBytes) bytes") }
        if let cwd, cwd.utf8.count > Limits.maxNameBytes { throw ValidationError("--cwd must be at most \(Limits.maxNameBytes) bytes") }
        if queue.isEmpty { throw ValidationError("--queue must not be empty") }
        if let problem = Limits.countProblem(cpus, name: "--cpus", range: 1...Limits.maxCpus) { throw ValidationError(problem) }
        if let memory, let problem = Limits.memoryProblem(memory, name: "--memory") { throw ValidationError(problem) }
    }

    /// The directory commands run in.
    var workingDirectory: String { cwd ?? FileManager.default.currentDirectoryPath }

    /// An operation spec with these settings and no work yet; a bad value is a usage error naming the option.
    func spec(requires: String = "any") throws(ExitStatus) -> OperationSpec {
        guard let level = QueuePriority(parsing: priority) else {
            throw fail(.usage, "--priority '\(priority)' is not veryLow, low, normal, high, veryHigh or an integer")
        }
        guard let service = QualityOfService(parsing: qos) else {
            throw fail(.usage, "--qos '\(qos)' is not one of " + QualityOfService.allCases.map(\.description).joined(separator: ", "))
        }
        let requirement: Requirement
        switch requires {
        case "any": requirement = .any
        case "success": requirement = .success
        default: throw fail(.usage, "--requires '\(requires)' is not 'any' or 'success'")
        }
        var spec = OperationSpec(queue: queue, priority: level, qualityOfService: service, requires: requirement,
                                 retries: retries, timeout: timeout)
        spec.resources = Resources(cpus: cpus, memory: memory.flatMap(ByteSize.bytes(parsing:)) ?? 0)
        return spec
    }
}
