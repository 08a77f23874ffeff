import Foundation
import Testing

/// `opq status` speaks ZMTP itself to a coordinator on this machine without CURVE keys (issue 19: libzmq
/// is not even loaded); what it prints and how it exits are what the libzmq path gives, and libzmq is
/// opened only by the commands that use it — with an error that says what to install when it is missing.
@Suite struct StatusDirectZMTPTests {
    /// A coordinator whose client endpoint is `tcp://127.0.0.1:PORT`: `opq status` speaks ZMTP by hand to
    /// it, and through libzmq to `tcp://localhost:PORT` (a host name is left to libzmq), the same socket.
    @Test func statusByHandPrintsWhatStatusThroughLibzmqPrints() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let coordinator = try Run("opq-coordinator", ["--workers-endpoint", "ipc://\(scratch.path("workers.sock"))",
                                                      "--clients-endpoint", "tcp://127.0.0.1:0"], in: scratch)
        defer { coordinator.stop() }
        try #require(coordinator.waitForOutput("\n", within: 30), "\(coordinator.stderr)")
        let field = try #require(coordinator.stdout.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("clients=") })
        let direct = String(field.dropFirst("clients=".count))
        let viaLibzmq = direct.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let file = try scratch.write("jobs.yaml", """
            operations:
              - name: a
                queue: q
                command: ["true"]
              - name: b
                after: [a]
                command: ["true"]
            """)
        let submit = try Run("opq", ["--coordinator", direct, "submit", file], in: scratch)
        #expect(submit.finish(within: 30) == 0, "\(submit.stderr)")
        let queue = try Run("opq", ["--coordinator", direct, "queue", "set", "q", "--max-concurrent", "3"], in: scratch)
        #expect(queue.finish(within: 30) == 0, "\(queue.stderr)")

        for arguments in [["status"], ["status", "--json"], ["status", "job-1"], ["status", "job-1", "--json"], ["status", "job-7"]] {
            let byHand = try Run("opq", ["--coordinator", direct] + arguments, in: scratch)
            let throughLibzmq = try Run("opq", ["--coordinator", viaLibzmq] + arguments, in: scratch)
            let status = byHand.finish(within: 30)
            #expect(status == throughLibzmq.finish(within: 30), "\(arguments): \(byHand.stderr) | \(throughLibzmq.stderr)")
            #expect(byHand.stdout == throughLibzmq.stdout, "\(arguments)")
            #expect(byHand.stderr == throughLibzmq.stderr.replacingOccurrences(of: viaLibzmq, with: direct), "\(arguments)")
            #expect(arguments.last == "job-7" ? status == 2 && byHand.stderr.contains("job-7") : status == 0 && (byHand.stdout.contains("job-1") || byHand.stdout.contains("\"id\":1")),
                    "\(arguments): \(byHand.stdout) \(byHand.stderr)")
        }
    }

    /// No coordinator: the same wait and the same message as through libzmq (exit status 3).
    @Test func noCoordinatorIsTheSameTimeoutAsThroughLibzmq() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let direct = "ipc://\(scratch.path("nobody.sock"))"
        let byHand = try Run("opq", ["--coordinator", direct, "status"], in: scratch)
        // tcp://localhost:1 goes through libzmq (a host name); nothing listens on port 1.
        let throughLibzmq = try Run("opq", ["--coordinator", "tcp://localhost:1", "status"], in: scratch)
        #expect(byHand.finish(within: 30) == 3)
        #expect(throughLibzmq.finish(within: 30) == 3)
        #expect(byHand.stderr == throughLibzmq.stderr.replacingOccurrences(of: "tcp://localhost:1", with: direct), "\(byHand.stderr)")
        #expect(byHand.stderr.contains("no answer from the coordinator at \(direct) within 5.0 s"), "\(byHand.stderr)")
    }

    /// A coordinator with CURVE keys and a client without: its greeting names CURVE, and `opq status` says
    /// at once what to give (through libzmq it waited 5 s for no answer: libzmq drops a NULL greeting).
    @Test func aCurveCoordinatorAskedWithoutKeysIsNamed() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let keys = try Run("opq", ["keys", "generate", "--role", "coordinator", "--out", scratch.path("keys")], in: scratch)
        #expect(keys.finish(within: 30) == 0, "\(keys.stderr)")
        for directory in ["workers", "clients"] {
            try FileManager.default.createDirectory(atPath: scratch.path(directory), withIntermediateDirectories: true)
        }
        let clients = "ipc://\(scratch.path("clients.sock"))"
        let coordinator = try Run("opq-coordinator", ["--curve-key", scratch.path("keys/coordinator.secret"),
                                                      "--authorized-workers", scratch.path("workers"), "--authorized-clients", scratch.path("clients"),
                                                      "--workers-endpoint", "ipc://\(scratch.path("workers.sock"))", "--clients-endpoint", clients],
                                  in: scratch)
        defer { coordinator.stop() }
        try #require(coordinator.waitForOutput("clients=", within: 30), "\(coordinator.stderr)")
        let status = try Run("opq", ["--coordinator", clients, "status"], in: scratch)
        #expect(status.finish(within: 30) == 3)
        #expect(status.stderr.contains("requires the CURVE security mechanism") && status.stderr.contains("--server-key"), "\(status.stderr)")
    }

    /// With libzmq.so.5 unusable (an empty file mounted over it in a private mount namespace), `opq status`
    /// still answers — it never opens libzmq — and a command that needs libzmq says which library, and what
    /// to install, instead of crashing; likewise when the file there lacks libzmq's functions.
    @Test func withoutLibzmqStatusAnswersAndOtherCommandsSayWhatToInstall() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let clients = "ipc://\(scratch.path("clients.sock"))"
        let coordinator = try Run("opq-coordinator", ["--workers-endpoint", "ipc://\(scratch.path("workers.sock"))",
                                                      "--clients-endpoint", clients], in: scratch)
        defer { coordinator.stop() }
        try #require(coordinator.waitForOutput("clients=", within: 30), "\(coordinator.stderr)")
        let library = try #require(Self.libzmq(in: scratch), "libzmq.so.5 not found in ld.so.cache")
        let empty = try scratch.write("empty.so", "")
        let status = try Run("opq", ["--coordinator", clients, "status", "--json"], in: scratch)
        #expect(status.finish(within: 30) == 0, "\(status.stderr)")

        let hiddenStatus = try Self.run(["opq", "--coordinator", clients, "status", "--json"], replacing: library, with: empty, in: scratch)
        #expect(hiddenStatus.finish(within: 30) == 0, "\(hiddenStatus.stderr)")
        #expect(hiddenStatus.stdout == status.stdout)

        let list = try Self.run(["opq", "--coordinator", clients, "list"], replacing: library, with: empty, in: scratch)
        #expect(list.finish(within: 30) == 3, "\(list.stdout)")
        #expect(list.stderr.contains("cannot load libzmq.so.5") && list.stderr.contains("apt-get install libzmq5"), "\(list.stderr)")

        // A library that is not libzmq under its name: the first function missing is named.
        let other = try #require(["/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/aarch64-linux-gnu/libz.so.1"]
            .first { FileManager.default.fileExists(atPath: $0) })
        let wrong = try Self.run(["opq", "--coordinator", clients, "list"], replacing: library, with: other, in: scratch)
        #expect(wrong.finish(within: 30) == 3, "\(wrong.stdout)")
        #expect(wrong.stderr.contains("libzmq.so.5 has no function zmq_errno") && wrong.stderr.contains("apt-get install libzmq5"), "\(wrong.stderr)")
    }

    /// No executable needs libzmq to start (`CZeroMQ` opens it at the first ZeroMQ call).
    @Test func noExecutableLinksLibzmq() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        for product in ["opq", "opq-coordinator", "opq-worker"] {
            let ldd = try Run("/usr/bin/ldd", [Executables.path(product)], in: scratch)
            #expect(ldd.finish(within: 30) == 0, "\(product): \(ldd.stderr)")
            #expect(ldd.stdout.contains("libc.so") && !ldd.stdout.contains("libzmq"), "\(product): \(ldd.stdout)")
        }
    }

    /// The file libzmq.so.5 resolves to (from `ldconfig -p`).
    static func libzmq(in scratch: Scratch) -> String? {
        guard let ldconfig = try? Run("/sbin/ldconfig", ["-p"], in: scratch), ldconfig.finish(within: 30) == 0 else { return nil }
        let line = ldconfig.stdout.split(separator: "\n").first { $0.contains("libzmq.so.5 ") }
        return line.flatMap { $0.components(separatedBy: " => ").last }.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
    }

    /// Runs the built executable `arguments[0]` in a private mount namespace where `file` is `replacement`.
    static func run(_ arguments: [String], replacing file: String, with replacement: String, in scratch: Scratch) throws -> Run {
        try Run("/usr/bin/unshare", ["-m", "/bin/sh", "-c", "mount --bind \"$0\" \"$1\" && shift && exec \"$@\"", replacement, file,
                                     Executables.path(arguments[0])] + arguments.dropFirst(), in: scratch)
    }
}
