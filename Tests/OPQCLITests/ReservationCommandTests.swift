import Foundation
import OPQRuntime
import Testing

/// `op-rN`, a reservation (an operation a client program will add later, that others already wait for),
/// wherever the CLI takes an operation id: `opq show` explains it, `opq add --after` waits for it,
/// `opq cancel` gives it up; once it ended, every one of them says so clearly.
@Suite(.serialized) struct ReservationCommandTests {
    @Test func showAddAndCancelTakeAReservationAndAnEndedOneIsAClearError() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let cluster = try AddWatchCommandTests.Cluster(scratch)
        defer { cluster.stop() }
        let clients = try #require(cluster.environment["OPQ_COORDINATOR"])
        func opq(_ arguments: [String]) throws -> (status: Int32?, stdout: String, stderr: String) {
            try cluster.opq(arguments, within: 60)
        }

        // A client program whose "report" waits for an operation it has not added: reservation op-r1.
        let program = try ChildProcess(
            Executables.path("opq-example-forward-dependency"), ["--clients", clients],
            environment: ["XDG_STATE_HOME": scratch.path("xdg-state")], stdinPipe: true, stdout: .capture)
        defer { program.kill() }
        #expect(program.waitForOutput("waits for data", within: 60), "\(program.tail())")
        let line = try #require(program.output.split(separator: "\n").first { $0.hasSuffix("waits for data") })
        let report = String(line.split(separator: " ")[1])

        let show = try opq(["show", "op-r1"])
        #expect(show.status == 2)
        #expect(show.stderr.contains("op-r1 is a reservation, not an operation yet"), "\(show.stderr)")
        #expect(show.stderr.contains("1 operation waits for it: \(report)"), "\(show.stderr)")

        let add = try opq(["add", "--after", "op-r1", "--requires", "success", "--", "true"])
        #expect(add.status == 0, "\(add.stderr)")
        let strict = add.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try opq(["show", "op-r1"]).stderr.contains("2 operations wait for it: \(report) \(strict)"))

        let cancel = try opq(["cancel", "op-r1"])
        #expect(cancel.status == 0, "\(cancel.stderr)")
        #expect(cancel.stdout == "cancelled 1 operation(s): op-r1\n")
        // As if the awaited operation finished cancelled: Foundation's rule runs report, success cancels.
        let waitReport = try opq(["wait", report, "--timeout", "60"])
        #expect(waitReport.status == 0 && waitReport.stdout.hasSuffix(": succeeded\n"), "\(waitReport.stdout)\(waitReport.stderr)")
        let waitStrict = try opq(["wait", strict, "--timeout", "60"])
        #expect(waitStrict.stdout.hasSuffix(": cancelled\n"), "\(waitStrict.stdout)\(waitStrict.stderr)")

        for arguments in [["cancel", "op-r1"], ["show", "op-r1"], ["wait", "op-r1", "--timeout", "5"]] {
            let again = try opq(arguments)
            #expect(again.status == 2, "\(arguments)")
            #expect(again.stderr.contains("unknown reservation op-r1: it was never handed out, or it ended"), "\(arguments): \(again.stderr)")
        }
        let late = try opq(["add", "--after", "op-r1"])
        #expect(late.status == 2 && late.stderr.contains("unknown dependency op-r1 (a reservation never handed out, or that ended"), "\(late.stderr)")
        let malformed = try opq(["cancel", "op-rx"])
        #expect(malformed.status == 2 && malformed.stderr.contains("write op-N, or op-rN for a reservation"), "\(malformed.stderr)")
    }
}
