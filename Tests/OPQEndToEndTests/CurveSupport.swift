import Foundation
import OPQClient
import OPQCore
import OPQWire
import Testing
import ZeroMQ

/// Keys for a CURVE cluster: the coordinator's pair, and directories of the worker and client public
/// keys it admits (written with the same code as `opq keys generate`).
struct CurveKeyring {
    let directory: String
    let coordinator: CurveKeyPair
    var authorizedWorkers: String { directory + "/authorized-workers" }
    var authorizedClients: String { directory + "/authorized-clients" }
    /// The coordinator's files (its `.public` is what `--server-key` takes).
    var coordinatorSecret: String { directory + "/coordinator.secret" }
    var coordinatorPublic: String { directory + "/coordinator.public" }

    init(in directory: String) throws {
        self.directory = directory
        for path in [directory, directory + "/authorized-workers", directory + "/authorized-clients", directory + "/own"] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        coordinator = try CurveKeyPair.generate()
        try CurveKeys.write(coordinator, to: directory, name: "coordinator")
    }

    /// A new key pair named `name` (its secret file: `own/NAME.secret`), its public key put in the
    /// directory of `role` (none: unknown to the coordinator).
    @discardableResult
    func make(_ name: String, authorizedAs role: Role?) throws -> (keys: CurveKeyPair, secretFile: String, publicFile: String) {
        let keys = try CurveKeyPair.generate()
        let files = try CurveKeys.write(keys, to: directory + "/own", name: name)
        if let role { try FileManager.default.copyItem(atPath: files.publicFile, toPath: authorizedFile(name, role)) }
        return (keys, files.secretFile, files.publicFile)
    }

    /// Where `name`'s public key sits when authorized as `role`.
    func authorizedFile(_ name: String, _ role: Role) -> String {
        (role == .worker ? authorizedWorkers : authorizedClients) + "/\(name).public"
    }

    enum Role { case worker, client }

    /// The coordinator's CURVE options.
    var coordinatorArguments: [String] {
        ["--curve-key", coordinatorSecret, "--authorized-workers", authorizedWorkers, "--authorized-clients", authorizedClients]
    }

    /// A worker's CURVE options with the secret key file `secretFile`.
    func workerArguments(_ secretFile: String) -> [String] { ["--server-key", coordinatorPublic, "--curve-key", secretFile] }
}

/// A free loopback TCP port (bound once by ZeroMQ and released), so a coordinator can be given fixed
/// endpoints that clients and workers connect to before it is up (ZeroMQ connects in the background).
func freeLoopbackPort() throws -> Int {
    let context = try Context()
    defer { context.close() }
    let socket = try context.socket(.router)
    defer { socket.close() }
    let endpoint = try socket.bind("tcp://127.0.0.1:*")
    return Int(endpoint.split(separator: ":").last!)!
}

/// Runs `body` on its own thread and waits up to `seconds` for its result; nil if it has not returned
/// by then (the thread is left blocked: a call that never returns is what such a test looks for).
func resultOnThread<T: Sendable>(within seconds: Double, _ body: @escaping @Sendable () -> T) -> T? {
    let slot = ThreadResult<T>()
    let thread = Thread {
        let value = body()
        slot.done.lock()
        slot.value = value
        slot.done.broadcast()
        slot.done.unlock()
    }
    thread.start()
    let deadline = Date().addingTimeInterval(seconds)
    slot.done.lock()
    defer { slot.done.unlock() }
    while slot.value == nil, slot.done.wait(until: deadline) {}
    return slot.value
}

/// The result of ``resultOnThread(within:_:)``'s thread, guarded by its condition.
private final class ThreadResult<T: Sendable>: @unchecked Sendable {
    let done = NSCondition()
    var value: T?
}
