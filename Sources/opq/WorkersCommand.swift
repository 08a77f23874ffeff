import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq workers`: the live workers, their slots and what they run.
struct WorkersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workers",
        abstract: "List live workers: name, host, slots, the operations they hold, the queues they serve.",
        discussion: """
            Examples:
              opq workers
              opq workers --json    # [{"name": …, "host": …, "pid": …, "slots": …, "operations": [...], "queues": null, …}]
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print a JSON array with stable field names (name, host, pid, slots, cpus, memory, operations, queues, labels, handlers, lastSeen).")
    var json = false

    func run() throws {
        let connection = try Connection.open(global.endpoint)
        let workers: [WorkerStatus]
        do {
            workers = try connection.workers()
        } catch {
            throw Connection.status(for: error)
        }
        if json {
            print(JSONOutput.string(workers.map { worker -> [String: Any] in
                [
                    "name": worker.name,
                    "host": worker.host,
                    "pid": worker.pid,
                    "slots": worker.slots,
                    "cpus": worker.cpus,
                    "memory": worker.memoryBytes.map { $0 as Any } ?? NSNull(),
                    "operations": worker.operations.map(\.rawValue),
                    "queues": worker.queues.map { $0 as Any } ?? NSNull(),
                    "labels": worker.labels,
                    "handlers": worker.handlers,
                    "lastSeen": worker.lastSeen,
                ]
            }))
            return
        }
        if workers.isEmpty { print("no workers") }
        for worker in workers {
            var line = worker.name + (worker.host.isEmpty ? "" : " (\(worker.host), pid \(worker.pid))")
            line += ": \(worker.operations.count)/\(worker.slots) slots busy"
            line += "; offers \(worker.cpus) cpus" + (worker.memoryBytes.map { ", \(ByteSize.format(Int(clamping: $0))) of memory" } ?? "")
            if !worker.operations.isEmpty { line += " — " + worker.operations.map { "op-\($0.rawValue)" }.joined(separator: " ") }
            if let queues = worker.queues { line += "; queues " + queues.joined(separator: ", ") }
            if !worker.labels.isEmpty { line += "; labels " + worker.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") }
            print(line)
        }
    }
}
