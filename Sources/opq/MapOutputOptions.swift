import ArgumentParser
import OPQClient
import OPQCore

/// `opq map`'s output options, as GNU parallel's: the commands' output is printed (grouped per operation
/// by default); see ``OutputPrinter``.
struct MapOutputOptions: ParsableArguments {
    @Flag(name: [.customShort("k"), .customLong("keep-order")], help: "Print the operations' output in input order (parallel -k).")
    var keepOrder = false

    @Flag(help: "Put the item and a tab before every line of output (parallel --tag).")
    var tag = false

    @Flag(help: "Pass whole lines on while the commands run, instead of each operation's output when it finishes (parallel --line-buffer).")
    var lineBuffer = false

    func validate() throws {
        if keepOrder && lineBuffer { throw ValidationError("-k/--keep-order and --line-buffer cannot be combined yet: choose one") }
    }

    /// The printer of a map job: command output to standard output (the job's own messages move to
    /// standard error), in the chosen mode. `items` are each operation's arguments, in input order.
    func printer(_ connection: CoordinatorClient, receipt: JobReceipt, items: [[String]]) -> OutputPrinter {
        var tags: [OperationID: String]?
        if tag { tags = Dictionary(zip(receipt.operations, items.map { $0.joined(separator: " ") }), uniquingKeysWith: { a, _ in a }) }
        return OutputPrinter(connection: connection, mode: keepOrder ? .keepOrder : lineBuffer ? .lineBuffer : .group,
                             order: receipt.operations, tags: tags, stdoutFD: OutputPrinter.takeStandardOutput())
    }
}
