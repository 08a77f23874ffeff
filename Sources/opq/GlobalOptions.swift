import ArgumentParser
import Foundation
import OPQClient
import ZeroMQ

/// Options every command that talks to a running coordinator takes.
struct GlobalOptions: ParsableArguments {
    /// The default client endpoint of `opq-coordinator`.
    static let defaultEndpoint = "tcp://127.0.0.1:7131"

    @Option(name: .long, help: ArgumentHelp(
        "The coordinator's client endpoint (environment: OPQ_COORDINATOR; default: \(GlobalOptions.defaultEndpoint)).",
        valueName: "endpoint"))
    var coordinator: String?

    @Option(name: .long, help: ArgumentHelp(
        "CURVE: the coordinator's public key file (environment: OPQ_SERVER_KEY, the key itself).", valueName: "file"))
    var serverKey: String?

    @Option(name: .long, help: ArgumentHelp(
        "CURVE: this client's secret key file, mode 0600 (environment: OPQ_CURVE_SECRET_KEY).", valueName: "file"))
    var curveKey: String?

    /// Reads the keys once, for every connection the command opens (``Connection/security``).
    mutating func validate() throws {
        do {
            Connection.security = try ConnectionSecurity.fromEnvironment(
                serverKeyFile: serverKey, clientKeyFile: curveKey, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The endpoint to use: the option, else `OPQ_COORDINATOR`, else the default.
    var endpoint: String {
        coordinator ?? ProcessInfo.processInfo.environment["OPQ_COORDINATOR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? Self.defaultEndpoint
    }
}
