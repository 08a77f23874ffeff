import ArgumentParser
import Foundation
import ZeroMQ

/// `opq keys`: CURVE key pairs for running a coordinator, its workers and its clients across machines.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Make CURVE key pairs for a coordinator, its workers and its clients.",
        subcommands: [KeysGenerateCommand.self]).subcommandOfOPQ
}

/// `opq keys generate`: one Z85 key pair, as NAME.public (give it out) and NAME.secret (mode 0600).
struct KeysGenerateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Write a CURVE key pair: DIR/NAME.public (mode 0644) and DIR/NAME.secret (mode 0600).",
        discussion: """
            The coordinator's secret key goes to opq-coordinator --curve-key; its public key to every worker \
            and client (--server-key, or $OPQ_SERVER_KEY). A worker's public key goes into the coordinator's \
            --authorized-workers directory, a client's into --authorized-clients; each keeps its secret key \
            (--curve-key, or $OPQ_CURVE_SECRET_KEY). Existing files are never overwritten.

            Examples:
              opq keys generate --role coordinator --out ~/.config/opq/keys
              opq keys generate --role worker --name node7 --out /etc/opq     # node7.public, node7.secret
              opq keys generate --role client --out ~/.config/opq/keys
            """)

    enum Role: String, ExpressibleByArgument, CaseIterable {
        case coordinator, worker, client
    }

    @Option(help: "Who uses the key: coordinator, worker or client (names the files by default).")
    var role: Role

    @Option(help: ArgumentHelp("The directory to write to (created with mode 0700 if missing).", valueName: "dir"))
    var out: String

    @Option(help: ArgumentHelp("The files' name without extension (default: the role).", valueName: "name"))
    var name: String?

    func validate() throws {
        if let name, name.isEmpty || name.contains("/") || name.hasPrefix(".") {
            throw ValidationError("--name must be a plain file name (no '/', not starting with '.'), not '\(name)'")
        }
    }

    func run() throws {
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw fail(.usage, "cannot create the directory \(out): \(error.localizedDescription)")
        }
        let files: (publicFile: String, secretFile: String)
        do {
            files = try CurveKeys.write(try CurveKeyPair.generate(), to: out, name: name ?? role.rawValue)
        } catch let error as CurveKeyError {
            throw fail(.usage, error.description)
        } catch {
            throw fail(.usage, "cannot make a CURVE key pair: \(error) (libzmq needs CURVE support)")
        }
        print("public key: \(files.publicFile)")
        print("secret key: \(files.secretFile) (mode 0600; keep it on this machine)")
        switch role {
        case .coordinator:
            print("next: opq-coordinator --curve-key \(files.secretFile) --authorized-workers DIR --authorized-clients DIR; copy \(files.publicFile) to every worker and client (--server-key)")
        case .worker:
            print("next: copy \(files.publicFile) into the coordinator's --authorized-workers directory; opq-worker --curve-key \(files.secretFile) --server-key COORDINATOR.public")
        case .client:
            print("next: copy \(files.publicFile) into the coordinator's --authorized-clients directory; opq --curve-key \(files.secretFile) --server-key COORDINATOR.public ...")
        }
    }
}
