import OPQCore

/// `opq-bench prune`: what `opq prune` costs in the core on a history of `--jobs` finished jobs, walking
/// the finish order (``Scheduler/pruneFinished(while:)``) beside the scan of every job that the
/// coordinator did before (each job's `isFinished`, its finish time against the cutoff, then `prune`).
///
/// Three prunes, each on a fresh history: one that removes nothing (every job is newer than the cutoff),
/// one that removes the oldest 1 %, one that removes everything.
enum PruneBenchmark {
    static let usage = """
        usage: opq-bench prune [--jobs N] [--smoke]

          --jobs N   finished jobs (one operation each) in the history (default 200000; --smoke: 2000)
          --smoke    a tiny run that checks the benchmark works (CI)
        """

    static func run(_ arguments: [String]) -> Int32 {
        var reader = ArgumentReader(arguments, command: "opq-bench prune", usage: usage)
        var jobs = 200_000
        var smoke = false
        while let argument = reader.next() {
            switch argument {
            case "--jobs": jobs = reader.positive(for: argument)
            case "--smoke": smoke = true
            default: reader.unknown(argument)
            }
        }
        if smoke && !reader.explicit.contains("--jobs") { jobs = 2_000 }
        var table = TextTable([.init("prune", right: false), .init("removed"), .init("scan ms"), .init("walk ms"),
                               .init("walk visits")])
        for (name, cutoff) in [("nothing to remove", 0), ("oldest 1 %", jobs / 100), ("everything", jobs)] {
            var scanned = history(jobs)
            let scanStart = Clock.nanoseconds()
            var removed = 0
            for number in 1...UInt64(scanned.jobCount) {
                let job = JobID(number)
                guard scanned.isFinished(job: job) == true, Int(number) <= cutoff else { continue }
                if scanned.prune(job: job) != nil { removed += 1 }
            }
            let scan = Clock.nanoseconds() - scanStart
            var walked = history(jobs)
            let walkStart = Clock.nanoseconds()
            let pruned = walked.pruneFinished { Int($0.rawValue) <= cutoff }
            let walk = Clock.nanoseconds() - walkStart
            guard pruned.count == removed else {
                var standardError = StandardError()
                print("opq-bench prune: the walk removed \(pruned.count) jobs, the scan \(removed)", to: &standardError)
                return 1
            }
            table.append([name, "\(removed)", Format.fixed(Double(scan) / 1e6, 3), Format.fixed(Double(walk) / 1e6, 3),
                       "\(walked.pruneVisits)"])
        }
        print("opq prune in the core, \(jobs) finished jobs of one operation each")
        print(table.render())
        return 0
    }

    /// A core whose `jobs` jobs (one empty operation each) all finished, in job order.
    static func history(_ jobs: Int) -> Scheduler {
        var core = Scheduler(configuration: .init())
        for _ in 0..<jobs {
            let receipt = try! core.submit(Submission([OperationSpec(name: "", work: .empty)]), at: 0)
            _ = try! core.cancel(job: receipt.job, at: 0)
            _ = core.takeEffects()
        }
        return core
    }
}
