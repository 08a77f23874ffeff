import Foundation
import Testing

/// A dependency's output file passed to its dependant end to end (docs/job-files.md "Passing a
/// dependency's output files"): `opq run` with its private coordinator and workers; the dependant reads
/// the file through `{outputs.NAME}` and `$OPQ_OUTPUT_NAME`, and reruns when that file is newer.
@Suite(.serialized) struct DependencyOutputRunTests {
    @Test func aDependantReadsItsDependencysOutputFileAndRerunsWhenItIsNewer() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("pipeline.yaml", """
            operations:
              - name: encode
                shell: printf 'encoded\\n' > enc.txt && echo encode >> ran.log
                outputs: [enc.txt]
              - name: wrap
                after: [encode]
                shell: 'cat {outputs.encode} > wrapped.txt && echo "via env: $OPQ_OUTPUT_encode" >> wrapped.txt && echo wrap >> ran.log'
                outputs: [wrapped.txt]
            """)
        func run() throws -> (stdout: String, ran: [String]) {
            try? FileManager.default.removeItem(atPath: scratch.path("ran.log"))
            let run = try ForeachRunTests.opq(in: scratch.path(""), ["run", file], scratch: scratch)
            #expect(run.finish(within: 120) == 0, "\(run.stdout)\(run.stderr)")
            let log = (try? String(contentsOfFile: scratch.path("ran.log"), encoding: .utf8)) ?? ""
            return (run.stdout, log.split(separator: "\n").map(String.init).sorted())
        }

        let first = try run()
        #expect(first.ran == ["encode", "wrap"], "\(first.stdout)")
        #expect(try String(contentsOfFile: scratch.path("wrapped.txt"), encoding: .utf8) == "encoded\nvia env: enc.txt\n")

        let again = try run()
        #expect(again.ran.isEmpty, "every output is there and newer than its inputs: \(again.stdout)")
        #expect(again.stdout.contains("succeeded 2 (2 up to date, not run)"), "\(again.stdout)")

        // The dependency's output is newer than the dependant's: only the dependant runs again (it took
        // enc.txt as its input, having none of its own).
        let later = Date(timeIntervalSinceNow: 60)
        try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: scratch.path("enc.txt"))
        let third = try run()
        #expect(third.ran == ["wrap"], "\(third.stdout)")
        #expect(third.stdout.contains("succeeded 2 (1 up to date, not run)"), "\(third.stdout)")
    }
}
