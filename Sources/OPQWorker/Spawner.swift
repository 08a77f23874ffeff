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
        var fds: [Int32] = [-1, -1]
        try SystemCall.check("pipe", "output pipe") { pipe(&fds) }
        for fd in fds {
            // posix_spawn closes descriptors ≥ 3 in the child as well; this covers other spawners.
            _ = try? SystemCall.check("fcntl", "FD_CLOEXEC") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        return Pipe(read: fds[0], write: fds[1])
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

/// Builds and runs one `posix_spawnp` for a ``Command``: a new process group, stdin from `/dev/null`,
/// stdout and stderr to the given pipes, the working directory, the worker's environment plus the
/// command's, default signal dispositions and an empty signal mask, and no other inherited descriptors.
enum Spawner {
    /// Spawns `command`; returns the child's pid (= its process group id).
    static func spawn(_ command: Command, stdout: Int32, stderr: Int32) throws(SystemError) -> pid_t {
        guard let program = command.argv.first, !program.isEmpty else {
            throw SystemError(call: "posix_spawnp", errno: ENOENT, detail: "the command's argv is empty")
        }
        var actions = posix_spawn_file_actions_t()
        try SystemCall.checkReturned("posix_spawn_file_actions_init") { posix_spawn_file_actions_init(&actions) }
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        try SystemCall.checkReturned("posix_spawnattr_init") { posix_spawnattr_init(&attributes) }
        defer { posix_spawnattr_destroy(&attributes) }

        if let directory = command.workingDirectory {
            try LinuxExtensions.addChdir(&actions, directory)
        }
        try SystemCall.checkReturned("posix_spawn_file_actions_addopen", "/dev/null") {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        try SystemCall.checkReturned("posix_spawn_file_actions_adddup2", "stdout") { posix_spawn_file_actions_adddup2(&actions, stdout, 1) }
        try SystemCall.checkReturned("posix_spawn_file_actions_adddup2", "stderr") { posix_spawn_file_actions_adddup2(&actions, stderr, 2) }
        try LinuxExtensions.addClosefrom(&actions, 3)

        let flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        try SystemCall.checkReturned("posix_spawnattr_setflags") { posix_spawnattr_setflags(&attributes, Int16(flags)) }
        try SystemCall.checkReturned("posix_spawnattr_setpgroup") { posix_spawnattr_setpgroup(&attributes, 0) }
        var signals = sigset_t()
        sigemptyset(&signals)
        try SystemCall.checkReturned("posix_spawnattr_setsigmask") { posix_spawnattr_setsigmask(&attributes, &signals) }
        sigfillset(&signals)
        try SystemCall.checkReturned("posix_spawnattr_setsigdefault") { posix_spawnattr_setsigdefault(&attributes, &signals) }

        var environment = ProcessInfo.processInfo.environment
        environment.merge(command.environment) { _, added in added }
        var arguments = command.argv
        var executable = program
        if let wrapper = Spawner.deathSignalWrapper {
            // The child dies with the worker (SIGKILL on the parent's death), so a worker killed with -9
            // leaves no command running on to completion behind the coordinator's back.
            let resolved = try Spawner.resolve(program)
            arguments = [wrapper, "--pdeathsig", "KILL", "--", resolved] + arguments.dropFirst()
            executable = wrapper
        }
        let argv = CStringArray(arguments)
        let envp = CStringArray(environment.map { "\($0.key)=\($0.value)" })
        var pid: pid_t = 0
        try SystemCall.checkReturned("posix_spawnp", "running '\(program)'") {
            posix_spawnp(&pid, executable, &actions, &attributes, argv.pointers, envp.pointers)
        }
        return pid
    }
}

extension Spawner {
    /// util-linux's `setpriv`, which sets the parent-death signal and then execs the command; nil when absent.
    static let deathSignalWrapper: String? = access("/usr/bin/setpriv", X_OK) == 0 ? "/usr/bin/setpriv" : nil

    /// `program` as an executable path: looked up in the worker's `PATH` unless it names a path.
    /// - Throws: the error `posix_spawnp` would give (ENOENT, EACCES) when there is no such program.
    static func resolve(_ program: String) throws(SystemError) -> String {
        if program.contains("/") {
            guard access(program, X_OK) == 0 else {
                throw SystemError(call: "posix_spawnp", errno: errno, detail: "running '\(program)'")
            }
            return program
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        var denied = false
        for directory in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + program
            if access(candidate, X_OK) == 0 { return candidate }
            if errno == EACCES { denied = true }
        }
        throw SystemError(call: "posix_spawnp", errno: denied ? EACCES : ENOENT, detail: "running '\(program)'")
    }
}

/// A NULL-terminated array of C strings that frees itself.
private final class CStringArray {
    let pointers: [UnsafeMutablePointer<CChar>?]

    init(_ strings: [String]) {
        pointers = strings.map { strdup($0) } + [nil]
    }

    deinit {
        for pointer in pointers { free(pointer) }
    }
}
