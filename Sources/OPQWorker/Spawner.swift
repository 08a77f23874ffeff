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
    /// Spawns `command`; returns the child's pid (= its process group id). A program named without a slash
    /// is found on the worker's `PATH` through `programs`.
    static func spawn(_ command: Command, stdout: Int32, stderr: Int32, programs: ProgramLookup = .worker,
                      leaseEntry: UnsafeMutablePointer<Int32>? = nil) throws(SystemError) -> pid_t {
        guard let program = command.argv.first, !program.isEmpty else {
            throw SystemError(call: "execve", errno: ENOENT, detail: "the command's argv is empty")
        }
        let environment = command.environment.isEmpty ? baseEnvironment : ChildSpawn.environment(adding: command.environment)
        let argv = CStringArray(command.argv)
        func start(_ path: String) -> Result<pid_t, SpawnFailure> {
            ChildSpawn.spawn(path, argv: argv, environment: environment, directory: command.workingDirectory,
                             stdout: stdout, stderr: stderr, deathSignal: SIGKILL, leaseEntry: leaseEntry)
        }
        let found = try programs.resolve(program)
        var spawned = start(found.path)
        if case .failure = spawned, found.remembered {
            // The remembered file may have gone or lost its execute bit since: look again, and run what is
            // found now if that is another file (a shell whose hashed command fails does the same).
            programs.forget(program)
            let again = try programs.resolve(program).path
            if again != found.path { spawned = start(again) }
        }
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

/// Finds programs on a search path (the worker's `PATH`) as `execvp` does — the first directory holding an
/// executable file of that name — and remembers what it found per name, so a command's spawn does not
/// probe every directory before its program's (`true` took 10 `access` calls on a usual `PATH`).
///
/// What it remembers stays right the way a shell's command hash does, and better: a remembered file that
/// is gone or no longer executable makes the spawn fail, and ``Spawner`` then forgets it and looks again
/// (so a program that moved is found at once); a name that was not found is never remembered (a program
/// that appears is found by the next command); and a remembered path is used for at most ``lifetime``
/// seconds, so a program that appears *earlier* on the search path than the remembered one is used from
/// at most that long after it appeared.
// @unchecked Sendable: `found` is guarded by `lock`; `searchPath` is immutable.
final class ProgramLookup: @unchecked Sendable {
    /// Seconds a found path is used without looking again.
    static let lifetime = 1.0
    /// More names than this and the memory starts over (commands naming ever new programs).
    static let capacity = 1024

    /// The worker's `PATH`, split once: `ProcessInfo.environment` copies the whole environment into a
    /// dictionary on every read, which cost more than the lookup itself on the path of every command.
    static let worker = ProgramLookup(searchPath: (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin")
        .split(separator: ":", omittingEmptySubsequences: false).map { $0.isEmpty ? "." : String($0) })

    /// The directories searched, in order.
    let searchPath: [String]
    private let lock = NSLock()
    private var found: [String: (path: String, at: Double)] = [:]

    init(searchPath: [String]) { self.searchPath = searchPath }

    /// `program` as an executable path: the program itself when it names a path, else looked up in the
    /// search path unless a lookup younger than ``lifetime`` (at `now`, ``ChildProcessGroup/now()`` seconds)
    /// found it. `remembered`: it came from memory (if it fails to start, ``forget(_:)`` it and look again).
    /// - Throws: ENOENT or EACCES (as `execvp` would) when there is no such program.
    func resolve(_ program: String, now: Double = ChildProcessGroup.now()) throws(SystemError) -> (path: String, remembered: Bool) {
        // A byte search: with Foundation imported, `contains("/")` is NSString's `range(of:)` (CFStringFind).
        if program.utf8.contains(UInt8(ascii: "/")) {
            guard access(program, X_OK) == 0 else {
                throw SystemError(call: "execve", errno: errno, detail: "running '\(program)'")
            }
            return (program, false)
        }
        if let known = lock.withLock({ found[program] }), now - known.at < Self.lifetime { return (known.path, true) }
        var denied = false
        for directory in searchPath {
            let candidate = directory + "/" + program
            if access(candidate, X_OK) == 0 {
                lock.withLock {
                    if found.count >= Self.capacity { found.removeAll() }
                    found[program] = (candidate, now)
                }
                return (candidate, false)
            }
            if errno == EACCES { denied = true }
        }
        throw SystemError(call: "execve", errno: denied ? EACCES : ENOENT, detail: "running '\(program)'")
    }

    /// Drops what was found for `program`: the next ``resolve(_:now:)`` searches again.
    func forget(_ program: String) {
        _ = lock.withLock { found.removeValue(forKey: program) }
    }
}
