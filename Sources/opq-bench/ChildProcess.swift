import Foundation
import OPQRuntime

/// Why the cluster benchmark could not go on: what failed, and what to do about it.
struct ClusterBenchError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}

/// The benchmark's processes are the runtime's (``OPQRuntime/ChildProcess``): each in its own process
/// group, killed when released, and by SIGKILL as their parent-death signal if the benchmark dies.
typealias ChildProcess = OPQRuntime.ChildProcess

extension ChildProcess {
    /// Starts `executable` with `arguments` from the benchmark's main thread; standard output and error
    /// go to `directory/name.log`.
    convenience init(_ executable: String, _ arguments: [String], name: String, directory: URL) throws {
        try self.init(executable, arguments, name: name, stdout: .file(directory.appendingPathComponent("\(name).log").path),
                      deathSignal: SIGKILL)
    }

    /// Sends SIGKILL (no warning, as a crash or `kill -9` would) and returns at once.
    func killNow() { signal(SIGKILL) }
}
