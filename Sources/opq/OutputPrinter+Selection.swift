import ArgumentParser
import OPQClient
import OPQCore

extension OutputPrinter.Selection: ExpressibleByArgument {}

extension OutputPrinter {
    /// Help of `--output` for `opq run` and `opq submit --wait`, naming the command's default.
    static func selectionHelp(default selection: Selection) -> ArgumentHelp {
        ArgumentHelp(
            "Print the output of all operations, of those that did not succeed (failed), or none, each under a '--- name (op-N) ---' header as it finishes (stdout to stdout, stderr to stderr; default: \(selection.rawValue)).",
            valueName: "all|failed|none")
    }

    /// The printer of `opq run` / `opq submit --wait` (nil for `none`): grouped per operation, with headers.
    static func forJob(_ connection: CoordinatorClient, receipt: JobReceipt, specs: [OperationSpec],
                       selection: Selection) -> OutputPrinter? {
        guard selection != .none else { return nil }
        let names = Dictionary(zip(receipt.operations, specs.map(\.name)), uniquingKeysWith: { a, _ in a })
        return OutputPrinter(connection: connection, mode: .group, selection: selection, order: receipt.operations, headers: names)
    }
}
