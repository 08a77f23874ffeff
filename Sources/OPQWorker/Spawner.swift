import OPQSpawn
import Foundation
import OPQCore
#if canImport(Glibc)
import Glibc
#endif

/// A pipe's two descriptors, both close-on-exec.
struct Pipe: Sendable {
    let read: Int32
    let write: Int32

    static func make() throws(SystemError) -> Pipe {
        // Close-on-exec from the start (opq_spawn closes descriptors ≥ 3 in the child as well; this covers
        // other spawners).
        switch ChildSpawn.makePipe() {
        case .success(let fds): return Pipe(read: fds.read, write: fds.write)
        case .failure(let failure): throw SystemError(call: "pipe2", errno: failure.errno, detail: "output pipe")
        }
    }

    static func close(_ fd: Int32) {
        // close is not retried on EINTR (on Linux the descriptor is released anyway).
        _ = Glibc.close(fd)
    }

    func closeBoth() {
        Pipe.close(read)
        Pipe.close(write)
    }
}

/// Starts one ``Command`` through `opq_spawn` (C, in `COPQSpawn`): a new process group, stdin from
/// `/dev/null`, stdout and stderr to the given pipes, the working directory, the worker's environment plus
/// the command's, default signal dispositions, an empty signal mask, no other inherited descriptors — and
/// SIGKILL as its parent-death signal, so a worker killed with -9 leaves no command running on to
/// completion behind the coordinator's back. (The death signal follows the *thread* that spawned the
/// child, which is why every spawn comes from a long-lived ``NicenessLane`` thread.)
enum Spawner {
    /// Spawns `command`; returns the child's pid (= its process group id).
    static func spawn(_ command: Command, stdout: Int32, stderr: Int32) throws(SystemError) -> pid_t {
        guard let program = command.argv.first, !program.isEmpty else {
            throw SystemError(call: "execve", errno: ENOENT, detail: "the command's argv is empty")
        }
        let environment = command.environment.isEmpty ? baseEnvironment : ChildSpawn.environment(adding: command.environment)
        let spawned = ChildSpawn.spawn(try resolve(program), argv: CStringArray(command.argv), environment: environment,
                                       directory: command.workingDirectory, stdout: stdout, stderr: stderr,
                                       deathSignal: SIGKILL)
        switch spawned {
        case .success(let pid):
            return pid
        case .failure(let failure):
            let detail = failure.errno == ENOENT && command.workingDirectory != nil
                ? "running '\(program)' in '\(command.workingDirectory!)'" : "running '\(program)'"
            throw SystemError(call: "execve", errno: failure.errno, detail: detail)
        }
    }

    /// The worker's environment as `KEY=value` strings, made once (the hot path of every command).
    private static let baseEnvironment = ChildSpawn.environment()
}

extension Spawner {
    /// `program` as an executable path: looked up in the worker's `PATH` unless it names a path.
    /// - Throws: ENOENT or EACCES (as `execvp` would) when there is no such program.
    static func resolve(_ program: String) throws(SystemError) -> String {
        if program.contains("/") {
            guard access(program, X_OK) == 0 else {
                throw SystemError(call: "execve", errno: errno, detail: "running '\(program)'")
            }
            return program
        }
        var denied = false
        for directory in searchPath {
            let candidate = directory + "/" + program
            if access(candidate, X_OK) == 0 { return candidate }
            if errno == EACCES { denied = true }
        }
        throw SystemError(call: "execve", errno: denied ? EACCES : ENOENT, detail: "running '\(program)'")
    }

    /// The worker's `PATH`, split once: `ProcessInfo.environment` copies the whole environment into a
    /// dictionary on every read, which cost more than the lookup itself on the path of every command.
    private static let searchPath: [String] = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin")
        .split(separator: ":", omittingEmptySubsequences: false).map { $0.isEmpty ? "." : String($0) }
}
