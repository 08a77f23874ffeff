// opq-example-forward-dependency: an operation that waits for one this program adds later, and what
// happens when the program dies before it does.
//
//   opq-example-forward-dependency --clients tcp://127.0.0.1:7131
//
// Adds "report" to queue "default": it depends on "data", which no queue has yet, so the coordinator
// holds a *reservation* for "data" (an id `op-rN`) and "report" waits on it (`opq show` names it; other
// programs may depend on `op-rN` too). Each line read from standard input adds nothing; end of input
// (Ctrl-D) adds "data", then "report" runs after it. Killed before that (even with SIGKILL), the program
// stops renewing the reservation's lease, and the coordinator gives it up when the lease runs out
// (`opq-coordinator --reservation-lease`, 30 s by default): "report" then runs as if "data" had finished
// cancelled, and dependants with `requires: success` are cancelled.
import Foundation
import OPQClient

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2, arguments[0] == "--clients" else {
    FileHandle.standardError.write(Data("usage: opq-example-forward-dependency --clients ENDPOINT\n".utf8))
    exit(2)
}
let queue = try RemoteOperationQueue(name: "default", endpoint: arguments[1])
let data = RemoteOperation(command: ["echo", "data"])
data.name = "data"
let report = RemoteOperation(command: ["echo", "report"])
report.name = "report"
try report.addDependency(data)
try queue.addOperation(report)
// The line a caller (or a test) waits for: the dependant's id, added and waiting.
FileHandle.standardOutput.write(Data("report \(report.id.map { "\($0)" } ?? "?") waits for data\n".utf8))

while readLine() != nil {}
try queue.addOperation(data)
report.waitUntilFinished()
print("report: \(report.outcome.map { "\($0)" } ?? "unfinished")")
queue.coordinator.close()
