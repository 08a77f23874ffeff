import Foundation
import Testing

/// `opq status` is read without ArgumentParser and other leaf commands without the whole command tree
/// (issue 19: CLI start); help and every mistake still go the whole way, so what they print is what the
/// whole tree prints — `Usage: opq SUB …`, never a leaf's own `Usage: SUB …`.
@Suite struct QuickStartTests {
    static let subcommands = ["run", "submit", "add", "map", "watch", "wait", "status", "list", "show", "logs", "cancel", "retry",
                              "suspend", "resume", "queue", "priority", "workers", "prune", "keys"]

    @Test func everySubcommandsHelpIsTheWholeTreesHelp() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        for subcommand in Self.subcommands {
            let help = try Run("opq", [subcommand, "--help"], in: scratch)
            #expect(help.finish(within: 30) == 0, "\(subcommand): \(help.stderr)")
            let viaHelp = try Run("opq", ["help", subcommand], in: scratch)
            #expect(viaHelp.finish(within: 30) == 0, "\(subcommand): \(viaHelp.stderr)")
            #expect(help.stdout.contains("USAGE: opq \(subcommand)"), "\(subcommand) --help: \(help.stdout)")
            #expect(help.stdout == viaHelp.stdout, "\(subcommand)")
        }
    }

    @Test func everySubcommandsMistakeNamesTheWholeCommand() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        for subcommand in Self.subcommands {
            let run = try Run("opq", [subcommand, "--no-such-option"], in: scratch)
            #expect(run.finish(within: 30) == 2, "\(subcommand): \(run.stderr)")
            // The first mistake ArgumentParser finds: the unknown option, or a missing argument before it.
            #expect(run.stderr.hasPrefix("Error: "), "\(subcommand): \(run.stderr)")
            #expect(run.stderr.contains("Usage: opq \(subcommand)") || run.stderr.contains("See 'opq \(subcommand) --help'"),
                    "\(subcommand): \(run.stderr)")
        }
    }

    /// What `status` reads by hand — a job, `--json`, the global options in both spellings — and what it
    /// leaves to ArgumentParser (a second job, a repeated option, a key file that cannot be read).
    @Test func statusReadByHandAnswersLikeTheWholeTree() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let clients = "ipc://\(scratch.path("clients.sock"))"
        let workers = "ipc://\(scratch.path("workers.sock"))"
        let coordinator = try Run("opq-coordinator", ["--workers-endpoint", workers, "--clients-endpoint", clients], in: scratch)
        defer { coordinator.stop() }
        #expect(coordinator.waitForOutput("clients=", within: 30))
        let file = try scratch.write("jobs.yaml", "operations:\n  - name: a\n    queue: q\n    command: [\"true\"]\n")
        let submit = try Run("opq", ["--coordinator", clients, "submit", file], in: scratch)
        #expect(submit.finish(within: 30) == 0, "\(submit.stderr)")
        #expect(submit.stdout == "job-1\n")

        for arguments in [["--coordinator", clients, "status"], ["status", "--coordinator=\(clients)"], ["status", "job-1", "--coordinator", clients],
                          ["status", "--coordinator", clients, "1"]] {
            let run = try Run("opq", arguments, in: scratch)
            #expect(run.finish(within: 30) == 0, "\(arguments): \(run.stderr)")
            #expect(run.stdout.contains("job-1"), "\(arguments): \(run.stdout)")
        }
        let json = try Run("opq", ["status", "--json", "--coordinator", clients], in: scratch)
        #expect(json.finish(within: 30) == 0, "\(json.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect((object?["queues"] as? [[String: Any]])?.contains { $0["name"] as? String == "q" } == true, "\(json.stdout)")

        let environment = ["OPQ_COORDINATOR": clients]
        let viaEnvironment = try Run("opq", ["status", "job-1"], in: scratch, environment: environment)
        #expect(viaEnvironment.finish(within: 30) == 0, "\(viaEnvironment.stderr)")
        #expect(viaEnvironment.stdout.hasPrefix("job-1: "), "\(viaEnvironment.stdout)")

        let notAJob = try Run("opq", ["status", "job-x"], in: scratch, environment: environment)
        #expect(notAJob.finish(within: 30) == 2)
        #expect(notAJob.stderr.contains("'job-x' is not a job id (write job-N)"), "\(notAJob.stderr)")

        let twoJobs = try Run("opq", ["status", "job-1", "job-2"], in: scratch, environment: environment)
        #expect(twoJobs.finish(within: 30) == 2)
        #expect(twoJobs.stderr.contains("Unexpected argument 'job-2'") && twoJobs.stderr.contains("Usage: opq status"), "\(twoJobs.stderr)")

        let missingKey = try Run("opq", ["status", "--server-key", scratch.path("absent.public")], in: scratch, environment: environment)
        #expect(missingKey.finish(within: 30) == 2)
        #expect(missingKey.stderr.contains("absent.public"), "\(missingKey.stderr)")
        #expect(missingKey.stderr.contains("Usage: opq status"), "\(missingKey.stderr)")
    }
}
