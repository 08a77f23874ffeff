import Foundation
import Testing

/// `--version` on the three executables: one source (OPQVersion), the release, the git revision when
/// scripts/install.sh built it, and the protocol version.
@Suite struct VersionTests {
    /// `0.1.0 (git 1a2b3c4d5e6f, protocol 1)`, or `(revision unknown: …, protocol 1)` for a plain `swift build`.
    static func isVersionLine(_ text: String) -> Bool {
        text.range(of: #"^[0-9]+\.[0-9]+\.[0-9]+ \((git [0-9a-f]+(-dirty)?|revision unknown: not built by scripts/install\.sh), protocol 1\)\n$"#,
                   options: .regularExpression) != nil
    }

    @Test(arguments: ["opq", "opq-coordinator", "opq-worker"])
    func versionPrintsTheReleaseTheRevisionAndTheProtocol(executable: String) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = try Run(executable, ["--version"], in: scratch)
        #expect(run.finish(within: 30) == 0, "\(run.stderr)")
        #expect(Self.isVersionLine(run.stdout), "\(executable) --version printed \(run.stdout.debugDescription)")
    }

    @Test func theThreeExecutablesPrintTheSameVersion() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let lines = try ["opq", "opq-coordinator", "opq-worker"].map { executable in
            let run = try Run(executable, ["--version"], in: scratch)
            _ = run.finish(within: 30)
            return run.stdout
        }
        #expect(Set(lines).count == 1, "\(lines)")
    }
}
