// opq-example-word-count: both sides of opq in one Swift program.
//
//   swift run opq-example-word-count README.md Package.swift
//
// The program starts a coordinator of its own (on ipc:// endpoints in a temporary directory), serves
// it with an embedded Worker that offers a "wordcount" handler — a plain Foundation Operation with
// progress and cooperative cancel — and, as a client, counts the words of the files given on a
// RemoteOperationQueue, then runs a command that depends on all of the counts.
//
// To use a cluster that is already running instead, pass its endpoints:
//
//   swift run opq-example-word-count --workers tcp://127.0.0.1:7130 --clients tcp://127.0.0.1:7131 FILE…
import Foundation
import Logging
import OPQClient
import OPQCoordinator
import OPQCore
import OPQWorker

/// Counts the words of the file named by the payload, 64 KiB at a time, reporting progress; returns
/// early when cancelled. Its last progress message is the result ("1234 words").
final class WordCountOperation: Operation, @unchecked Sendable {
    let request: HandlerContext

    init(_ request: HandlerContext) { self.request = request }

    override func main() {
        guard let path = request.payloadText, let data = FileManager.default.contents(atPath: path) else { return }
        let bytes = [UInt8](data)
        var words = 0
        var inWord = false
        for start in stride(from: 0, to: max(bytes.count, 1), by: 65_536) {
            if isCancelled { return }
            for byte in bytes[start..<min(start + 65_536, bytes.count)] {
                let space = byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
                if !space && !inWord { words += 1 }
                inWord = !space
            }
            let done = Double(min(start + 65_536, bytes.count)) / Double(max(bytes.count, 1))
            request.reportProgress(fraction: done, message: done < 1 ? "counting" : "\(words) words")
        }
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
@MainActor func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    defer { arguments.removeSubrange(index...index + 1) }
    return arguments[index + 1]
}
var logger = Logger(label: "opq.example")
logger.logLevel = .warning

// ── A coordinator (embedded unless endpoints were given) ──────────────────────────────────────────
var workersEndpoint = option("--workers")
var clientsEndpoint = option("--clients")
var embedded: Coordinator?
if workersEndpoint == nil || clientsEndpoint == nil {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-example-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var configuration = CoordinatorConfiguration()
    configuration.workersEndpoint = "ipc://\(directory.path)/workers"
    configuration.clientsEndpoint = "ipc://\(directory.path)/clients"
    let coordinator = try Coordinator(configuration: configuration, logger: logger)
    Thread { try? coordinator.run() }.start()
    (workersEndpoint, clientsEndpoint, embedded) = (coordinator.workersEndpoint, coordinator.clientsEndpoint, coordinator)
}
let files = arguments.isEmpty ? ["README.md", "Package.swift"] : arguments

// ── The worker side: an embedded worker with a handler of this program ──────────────────────────
let worker = try Worker(coordinator: workersEndpoint!, name: "example-\(getpid())", slots: 2, logger: logger)
worker.register("wordcount") { request in WordCountOperation(request) }
worker.start()

// ── The client side: Foundation's OperationQueue API, run by the cluster ─────────────────────────
let queue = try RemoteOperationQueue(name: "wordcount", endpoint: clientsEndpoint!)
let counts = files.map { file in
    let operation = RemoteOperation(handler: "wordcount", text: URL(fileURLWithPath: file).path)
    operation.name = file
    operation.completionBlock = { print("finished: \(file)") }
    return operation
}
let summary = RemoteOperation(command: ["echo", "counted \(files.count) files"])
for count in counts { try summary.addDependency(count) }
try queue.addOperations(counts + [summary], waitUntilFinished: false)
queue.waitUntilAllOperationsAreFinished()

for operation in counts {
    print("\(operation.name): \(operation.outcome.map { "\($0)" } ?? "unfinished"), \(operation.reportedProgress.message)")
}
print("summary: \(try summary.output().standardOutputText.trimmingCharacters(in: .whitespacesAndNewlines))")
print("queue progress: \(queue.progress.completedUnitCount)/\(queue.progress.totalUnitCount) operations")

worker.stop()
_ = try? worker.waitUntilStopped(timeout: 10)
queue.coordinator.close()
embedded?.stop()
