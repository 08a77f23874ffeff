import ArgumentParser
import Foundation
import OPQJobFile

/// `opq map`'s GNU parallel options for records and reruns: `--joblog`, `--resume`, `--resume-failed`,
/// `--halt` (see ``Joblog``, ``HaltPolicy`` and ``MapFollower``).
struct MapRerunOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Write GNU parallel's joblog (a line per finished command: Seq, Host, Starttime, JobRuntime, Send, Receive, Exitval, Signal, Command) to file.", valueName: "file"))
    var joblog: String?

    @Flag(help: "With --joblog: skip the items already in the joblog (by Seq) and append to it.")
    var resume = false

    @Flag(help: "With --joblog: rerun the items that failed, skip those that succeeded, run those not in it yet; append.")
    var resumeFailed = false

    @Option(help: ArgumentHelp("Stop early, as parallel: now,fail=1 (cancel the running commands), soon,fail=N (let them finish, start no more), now,fail=10%, success=N, done=N.", valueName: "when,why=n"))
    var halt: String?

    func validate() throws {
        if (resume || resumeFailed) && joblog == nil { throw ValidationError("--resume and --resume-failed need --joblog FILE (the log of the earlier run)") }
        if resume && resumeFailed { throw ValidationError("--resume and --resume-failed contradict each other; --resume-failed also skips what succeeded") }
        do { _ = try haltPolicy() } catch { throw ValidationError("\(error)") }
    }

    func haltPolicy() throws(HaltPolicyError) -> HaltPolicy? {
        try halt.flatMap { text throws(HaltPolicyError) in try HaltPolicy.parse(text) }
    }

    /// The sequence numbers (`{#}`) the joblog says need no rerun: none without `--resume`/`--resume-failed`.
    func done() throws(ExitStatus) -> Set<Int> {
        guard let joblog, resume || resumeFailed else { return [] }
        guard let data = FileManager.default.contents(atPath: joblog) else { return [] }  // a first run: nothing done
        do {
            return Joblog.done(try Joblog.entries(String(decoding: data, as: UTF8.self), path: joblog), failedToo: resume)
        } catch {
            throw fail(.usage, "\(error)")
        }
    }

    /// Opens the joblog for this run: appended to on a resume (with the header when it is new), else
    /// started afresh, as parallel does. Nil without `--joblog`.
    func openJoblog() throws(ExitStatus) -> FileHandle? {
        guard let joblog else { return nil }
        let appending = (resume || resumeFailed) && FileManager.default.fileExists(atPath: joblog)
        if !appending {
            guard FileManager.default.createFile(atPath: joblog, contents: Data((Joblog.header + "\n").utf8)) else {
                throw fail(.usage, "cannot write the joblog \(joblog): \(String(cString: strerror(errno))); give a writable path to --joblog")
            }
        }
        guard let handle = FileHandle(forWritingAtPath: joblog) else {
            throw fail(.usage, "cannot open the joblog \(joblog) for writing: \(String(cString: strerror(errno)))")
        }
        handle.seekToEndOfFile()
        return handle
    }
}
