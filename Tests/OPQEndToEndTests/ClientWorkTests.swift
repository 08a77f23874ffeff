import Foundation
import OPQClient
import OPQCore
import Testing

/// The kinds of work a RemoteOperation carries, and what it reports back.
@Suite(.serialized) struct ClientWorkTests {
    @Test func commandsHandlersAndEmptyOperationsReportTheirOutcomeExitStatusAndOutput() throws {
        let live = try ClientCluster(workers: [4])
        defer { live.stop() }
        let queue = live.queue("work")
        let failing = RemoteOperation(command: ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"])
        let pair = RemoteOperation(commands: [["echo", "first"], ["echo", "second"]])
        let halfFailing = RemoteOperation(commands: [["true"], ["false"]])
        let handler = RemoteOperation(handler: "sleep", text: "0")
        let empty = RemoteOperation()
        let operations = [failing, pair, halfFailing, handler, empty]
        try queue.addOperations(operations, waitUntilFinished: true)

        #expect(failing.outcome == .failed && failing.exitStatus == 3 && failing.finishReason == .exitStatus)
        let output = try failing.output()
        #expect(output.standardOutputText == "out\n" && output.standardErrorText == "err\n")
        #expect(output.standardOutputTotal == 4)
        #expect(pair.outcome == .succeeded)
        #expect(Set(try pair.output().standardOutputText.split(separator: "\n")) == ["first", "second"])
        #expect(halfFailing.outcome == .failed, "several commands succeed only if all do")
        #expect(handler.outcome == .succeeded && handler.worker == "w1")
        #expect(empty.outcome == .succeeded && empty.attempt == 0, "an empty operation needs no worker")
        #expect(operations.allSatisfy { $0.job == failing.job && $0.queueName == "work" }, "one batch, one job")
    }
}
