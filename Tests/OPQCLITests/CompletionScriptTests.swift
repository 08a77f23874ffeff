import Foundation
import Testing

/// `--generate-completion-script`: answered from the root for every command line that asks for it. The
/// subcommands name `opq` as their super-command, so ArgumentParser skips this request's check when a
/// subcommand is parsed alone (at every start); the request itself must still be answered as before.
@Suite struct CompletionScriptTests {
    @Test(arguments: [
        (["--generate-completion-script", "bash"], "__opq_cursor_index_in_current_word"),
        (["map", "--generate-completion-script", "bash"], "__opq_cursor_index_in_current_word"),
        (["status", "--generate-completion-script", "zsh"], "#compdef opq"),
        (["--generate-completion-script", "fish"], "complete -c 'opq'"),
    ])
    func theScriptIsPrintedForTheWholeCommand(arguments: [String], marker: String) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = try Run("opq", arguments, in: scratch)
        #expect(run.finish(within: 30) == 0, "\(run.stderr)")
        #expect(run.stdout.contains(marker), "\(arguments): \(run.stdout.prefix(300))")
        // Every subcommand is offered, not only the one named before the request.
        for name in ["map", "run", "status", "submit", "wait", "cancel"] {
            #expect(run.stdout.contains(name), "\(arguments): no \(name) in the script")
        }
    }
}
