import ArgumentParser
import Foundation

/// Options every command that talks to a running coordinator takes.
struct GlobalOptions: ParsableArguments {
    /// The default client endpoint of `opq-coordinator`.
    static let defaultEndpoint = "tcp://127.0.0.1:7131"

    @Option(name: .long, help: ArgumentHelp(
        "The coordinator's client endpoint (environment: OPQ_COORDINATOR; default: \(GlobalOptions.defaultEndpoint)).",
        valueName: "endpoint"))
    var coordinator: String?

    /// The endpoint to use: the option, else `OPQ_COORDINATOR`, else the default.
    var endpoint: String {
        coordinator ?? ProcessInfo.processInfo.environment["OPQ_COORDINATOR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? Self.defaultEndpoint
    }
}
