import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQWire

/// `opq logs OP`: the captured output tails of an operation's last attempt.
struct LogsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logs",
        abstract: "Print the captured output of an operation: its stdout tail, then its stderr tail.",
        discussion: """
            The stdout tail goes to standard output and the stderr tail to standard error, so they can be
            separated with redirections. Workers keep only the tail of long output; a truncated tail is
            noted on standard error.

            Examples:
              opq logs op-17
              opq logs 17 2>/dev/null     # stdout only
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "op-N or N.")
    var operation: String

    func run() throws {
        let id = try ShowCommand.operationID(operation)
        let connection = try Connection.open(global.endpoint)
        let answer: (reply: Opq_V1_Reply, raw: [[UInt8]])
        do {
            answer = try connection.request {
                $0.getOperation.operation = id
                $0.getOperation.includeOutput = true
            }
        } catch {
            throw Connection.status(for: error)
        }
        let info = answer.reply.operation
        if info.stdout.isTruncated(in: answer.raw) {
            printError("opq: stdout truncated: last \(info.stdout.bytes(in: answer.raw).count) of \(info.stdout.totalBytes) bytes")
        }
        FileHandle.standardOutput.write(Data(info.stdout.bytes(in: answer.raw)))
        if info.stderr.isTruncated(in: answer.raw) {
            printError("opq: stderr truncated: last \(info.stderr.bytes(in: answer.raw).count) of \(info.stderr.totalBytes) bytes")
        }
        FileHandle.standardError.write(Data(info.stderr.bytes(in: answer.raw)))
    }
}
