import ArgumentParser
import Foundation
import OPQCore
import OPQJournal
import OPQLogging

extension OPQCoordinatorCommand {
    /// The values an option takes when it is not given: one place for the declarations above and for
    /// ``quickParsed(_:)``.
    enum Defaults {
        static let heartbeat = 1.0
        static let liveness = 3
        static let killGrace = 10.0
        static let fsync = Journal.Sync.processCrash.rawValue
        static let recoveryGrace = 5.0
        static let reservationLease = Limits.defaultReservationLease
        static let outputSpoolCap = 1_024
        static let outputSpoolBudget = 8_192
        static let localWorkers = 0
        static let logLevel = "info"
        static let logFormat = LogFormat.text.rawValue
    }

    /// Reads the command line without ArgumentParser when it holds only `--name value` pairs (and
    /// `--no-journal`) of the options the private cluster of `opq run` and `opq map --local` is started with;
    /// nil for anything else — another option, `--name=value`, a repeated option, a value that is not a
    /// number where one is needed, `--help` — which ArgumentParser then reads as always (and reports).
    ///
    /// ArgumentParser reflects every option of the command at each start: ≈ 5.7 ms of the coordinator's
    /// start (`perf record` over 20 starts), before it can bind, while every `opq map --local` waits.
    static func quickParsed(_ arguments: [String]) -> OPQCoordinatorCommand? {
        var command = OPQCoordinatorCommand()
        // Every property gets a value: one never set reads as a "definition" (ArgumentParser stops the process).
        command.workersEndpoint = nil
        command.clientsEndpoint = nil
        command.ipc = nil
        command.heartbeat = Defaults.heartbeat
        command.liveness = Defaults.liveness
        command.killGrace = Defaults.killGrace
        command.state = nil
        command.noJournal = false
        command.fsync = Defaults.fsync
        command.recoveryGrace = Defaults.recoveryGrace
        command.reservationLease = Defaults.reservationLease
        command.outputSpoolCap = Defaults.outputSpoolCap
        command.outputSpoolBudget = Defaults.outputSpoolBudget
        command.localWorkers = Defaults.localWorkers
        command.localSlots = nil
        command.spin = nil
        command.logLevel = Defaults.logLevel
        command.logFormat = Defaults.logFormat
        command.http = nil
        command.curveKey = nil
        command.authorizedWorkers = nil
        command.authorizedClients = nil
        command.httpToken = nil
        var seen: Set<String> = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let name = arguments[index]
            guard seen.insert(name).inserted else { return nil }
            if name == "--no-journal" {
                command.noJournal = true
                index += 1
                continue
            }
            guard index + 1 < arguments.endIndex, !arguments[index + 1].hasPrefix("-") else { return nil }
            let value = arguments[index + 1]
            switch name {
            case "--workers-endpoint": command.workersEndpoint = value
            case "--clients-endpoint": command.clientsEndpoint = value
            case "--state": command.state = value
            case "--log-level": command.logLevel = value
            case "--local-workers":
                guard let count = Int(value) else { return nil }
                command.localWorkers = count
            case "--local-slots":
                guard let count = Int(value) else { return nil }
                command.localSlots = count
            case "--kill-grace":
                guard let seconds = Double(value) else { return nil }
                command.killGrace = seconds
            default:
                return nil
            }
            index += 2
        }
        return command
    }

    /// Runs a command line read by ``quickParsed(_:)`` when it is valid, else through ArgumentParser (which
    /// says what is wrong the usual way); exits as ArgumentParser's `main` does.
    static func main() {
        LibraryPreload.start()
        if var command = quickParsed(Array(CommandLine.arguments.dropFirst())), (try? command.validate()) != nil {
            do {
                try command.run()
            } catch {
                exit(withError: error)
            }
            return
        }
        main(nil)
    }
}
