import ArgumentParser
import Foundation
import OPQClient
import OPQCore

/// `opq logs OP`: the complete output of an operation's last attempt, while the coordinator keeps it.
struct LogsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logs",
        abstract: "Print the output of an operation: its stdout to standard output, its stderr to standard error.",
        discussion: """
            The whole output of the operation's last attempt, byte for byte, fetched from the coordinator's output spool one slice at a time (so any size works). While the operation runs, what it wrote so far.

            The coordinator keeps each stream's first 1 GiB (opq-coordinator's output spool cap) and all output within its spool budget, dropping the oldest finished operations' first, until the job is pruned or the coordinator restarts. Output that was cut or is no longer kept whole is said so on standard error, and then its last 64 KiB (the tail every finish carries) are printed.

            Examples:
              opq logs op-17
              opq logs 17 2>/dev/null     # stdout only
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Argument(help: "op-N or N.")
    var operation: String

    func run() throws {
        let id = OperationID(try ShowCommand.operationID(operation))
        let connection = try Connection.open(global.endpoint)
        do {
            for (stream, handle) in [(StandardStream.standardOutput, FileHandle.standardOutput), (.standardError, FileHandle.standardError)] {
                let name = stream.description
                let copy = try connection.copyOutput(id, stream) { handle.write(Data($0)) }
                if copy.expired {
                    try printTail(connection, id, stream, name: name, to: handle)
                } else if copy.isCut {
                    printError("opq: \(name) was cut: the coordinator kept its first \(copy.spooled) of \(copy.total) bytes; its last bytes follow")
                    try printTail(connection, id, stream, name: name, to: handle, onlyIfCut: false)
                } else if !copy.complete {
                    printError("opq: op-\(id.rawValue) is still running: \(name) so far (\(copy.offset) bytes)")
                }
            }
        } catch {
            throw Connection.status(for: error)
        }
    }

    /// The tail the coordinator keeps from the finish report (when the spool has nothing).
    private func printTail(_ connection: CoordinatorClient, _ id: OperationID, _ stream: StandardStream, name: String,
                           to handle: FileHandle, onlyIfCut: Bool = true) throws(ClientError) {
        let tail = try connection.operation(id, includeOutput: true).tail(stream)
        let bytes = tail?.bytes ?? []
        if onlyIfCut, let tail, tail.isTruncated {
            printError("opq: \(name) is no longer kept whole (expired from the output spool): its last \(bytes.count) of \(tail.totalBytes) bytes")
        }
        handle.write(Data(bytes))
    }
}
