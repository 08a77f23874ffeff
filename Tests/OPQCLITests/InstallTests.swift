import Foundation
import Testing

/// scripts/install.sh: binaries that run without the Swift toolchain, man pages, completions, and the
/// systemd units of deploy/systemd checked against them. The release build takes minutes, so
/// scripts/test.sh runs install.sh once into a temporary prefix and passes it as OPQ_INSTALL_PREFIX
/// (without it, the suite runs install.sh itself).
@Suite(.serialized) struct InstallTests {
    static let products = ["opq", "opq-coordinator", "opq-worker"]
    /// Where the toolchain keeps the shared Swift runtime a dynamically linked opq needs.
    static let toolchainLibraries = "/opt/swift/usr/lib/swift/linux"

    /// The installed prefix (installed once per test run).
    static let prefix: Result<String, any Error> = Result {
        if let prefix = ProcessInfo.processInfo.environment["OPQ_INSTALL_PREFIX"] { return prefix }
        let scratch = try Scratch()
        // Its own build directory: `swift test` holds .build's lock while it runs.
        let install = try Run(Executables.repository.path + "/scripts/install.sh",
                              ["--prefix", scratch.path("prefix"), "--scratch-path", Executables.repository.path + "/.build/install"],
                              in: scratch)
        guard install.finish(within: 3_600) == 0 else { throw InstallError("install.sh failed: \(install.stderr)") }
        return scratch.path("prefix")
    }

    struct InstallError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs `arguments` in a private mount namespace where the toolchain's Swift libraries are an empty directory.
    static func withoutToolchain(_ arguments: [String], in scratch: Scratch, environment: [String: String] = [:]) throws -> Run {
        let empty = scratch.path("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        return try Run("/usr/bin/unshare", ["-m", "/bin/sh", "-c", "mount --bind \"$0\" \(toolchainLibraries) && exec \"$@\"", empty] + arguments,
                       in: scratch, environment: environment)
    }

    @Test func theInstalledBinariesNeedNoSwiftLibrariesAndRunAJobWithTheToolchainHidden() throws {
        let prefix = try Self.prefix.get()
        let scratch = try Scratch()
        defer { scratch.remove() }
        for product in Self.products {
            let ldd = try Run("/usr/bin/ldd", [prefix + "/bin/" + product], in: scratch)
            #expect(ldd.finish(within: 30) == 0)
            #expect(!ldd.stdout.contains("libswift") && !ldd.stdout.contains("libFoundation") && !ldd.stdout.contains("/opt/swift"),
                    "\(product) links the toolchain: \(ldd.stdout)")
            #expect(!ldd.stdout.contains("libzmq"), "\(product) links libzmq (CZeroMQ opens it on first use): \(ldd.stdout)")
            let version = try Self.withoutToolchain([prefix + "/bin/" + product, "--version"], in: scratch)
            #expect(version.finish(within: 30) == 0, "\(product): \(version.stderr)")
            #expect(VersionTests.isVersionLine(version.stdout) && version.stdout.contains("(git "),
                    "an installed binary names its git revision: \(version.stdout)")
        }
        // The hiding is real: the debug build (dynamically linked) cannot even start.
        let debug = try Self.withoutToolchain([Executables.path("opq"), "--version"], in: scratch)
        #expect(debug.finish(within: 30) != 0 && debug.stderr.contains("libswift"), "\(debug.stderr)")

        // A real job: opq run starts the installed opq-coordinator and opq-worker beside it.
        let output = scratch.path("out")
        let job = try scratch.write("job.yaml", """
            operations:
              - name: hello
                shell: "echo hello > '\(output)'"
              - name: checksum
                handler: sha256
                payload: '\(output)'
                after: [hello]
            """)
        let run = try Self.withoutToolchain([prefix + "/bin/opq", "run", job, "--workers", "1"], in: scratch)
        #expect(run.finish(within: 120) == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("succeeded 2, failed 0"), "\(run.stdout)")
        #expect((try? String(contentsOfFile: output, encoding: .utf8)) == "hello\n")
    }

    @Test func manPagesAndCompletionsAreInstalled() throws {
        let prefix = try Self.prefix.get()
        for product in Self.products {
            let page = try String(contentsOfFile: "\(prefix)/share/man/man1/\(product).1", encoding: .utf8)
            #expect(page.contains(".Dt \(product.uppercased()) 1") || page.contains(".TH"), "an mdoc page: \(page.prefix(300))")
            #expect(page.contains("version"), "the page lists the options")
            let bash = try String(contentsOfFile: "\(prefix)/share/bash-completion/completions/\(product)", encoding: .utf8)
            #expect(bash.contains("complete") && bash.contains(product))
            let zsh = try String(contentsOfFile: "\(prefix)/share/zsh/site-functions/_\(product)", encoding: .utf8)
            #expect(zsh.hasPrefix("#compdef \(product)"), "\(zsh.prefix(80))")
            let fish = try String(contentsOfFile: "\(prefix)/share/fish/vendor_completions.d/\(product).fish", encoding: .utf8)
            #expect(fish.contains("complete -c '\(product)'"))
        }
        let opq = try String(contentsOfFile: "\(prefix)/share/bash-completion/completions/opq", encoding: .utf8)
        #expect(opq.contains("submit") && opq.contains("workers"), "subcommands complete")
    }

    /// deploy/systemd's units, with /usr/local replaced by the installed prefix, pass `systemd-analyze
    /// verify` — which also checks that ExecStart is executable and that the man pages named in
    /// Documentation= exist (MANPATH points at the prefix).
    @Test func theSystemdUnitsVerify() throws {
        let prefix = try Self.prefix.get()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let units = Executables.repository.appendingPathComponent("deploy/systemd")
        for name in ["opq-coordinator.service", "opq-worker@.service"] {
            let text = try String(contentsOf: units.appendingPathComponent(name), encoding: .utf8)
            #expect(text.contains("ExecStart=/usr/local/bin/"))
            _ = try scratch.write(name, text.replacingOccurrences(of: "/usr/local/", with: prefix + "/"))
        }
        let verify = try Run("/usr/bin/systemd-analyze", ["verify", scratch.path("opq-coordinator.service"), scratch.path("opq-worker@w1.service")],
                             in: scratch, environment: ["MANPATH": prefix + "/share/man"])
        #expect(verify.finish(within: 60) == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.isEmpty && verify.stderr.isEmpty, "no warning: \(verify.stdout)\(verify.stderr)")
    }
}
