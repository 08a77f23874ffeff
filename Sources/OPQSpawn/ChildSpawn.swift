import COPQSpawn
#if canImport(Glibc)
import Glibc
#endif

/// Starting a child process the one way opq does (`opq_spawn` in `COPQSpawn`): its own process group,
/// stdin from a file (default `/dev/null`), stdout and stderr to given descriptors, every other
/// descriptor closed, default signal dispositions, an empty signal mask, optionally a working directory
/// and a parent-death signal. Used by the worker for commands, by `opq` for its embedded cluster, by the
/// benchmark and by the test harnesses.
public enum ChildSpawn {
    /// Starts `path` (an executable path; no PATH search) with `arguments` (`argv[1...]`; `argv[0]` is
    /// `path`) and returns its pid, which is also its process group id.
    ///
    /// - Parameters:
    ///   - environment: `KEY=value` strings.
    ///   - deathSignal: sent to the child when the *thread* calling this ends (`PR_SET_PDEATHSIG`); 0 for
    ///     none. Give one only from a thread that lives as long as the child should.
    /// - Returns: the pid, or the `errno` the child could not start with (ENOENT, EACCES…).
    public static func spawn(
        _ path: String, arguments: [String], environment: CStringArray, directory: String? = nil,
        stdinPath: String? = nil, stdout: Int32, stderr: Int32, deathSignal: Int32 = 0
    ) -> Result<pid_t, SpawnFailure> {
        spawn(path, argv: CStringArray([path] + arguments), environment: environment, directory: directory,
              stdinPath: stdinPath, stdout: stdout, stderr: stderr, deathSignal: deathSignal)
    }

    /// The same with a ready `argv` (whose first element is the program's name as it sees it); `leaseEntry`
    /// (``LeaseWatchdog/slot(of:)``) gets the child's group id before it execs.
    public static func spawn(
        _ path: String, argv: CStringArray, environment: CStringArray, directory: String? = nil,
        stdinPath: String? = nil, stdout: Int32, stderr: Int32, deathSignal: Int32 = 0,
        leaseEntry: UnsafeMutablePointer<Int32>? = nil
    ) -> Result<pid_t, SpawnFailure> {
        let pid = withOptionalCString(directory) { directory in
            withOptionalCString(stdinPath) { stdinPath in
                path.withCString { path in
                    argv.pointers.withUnsafeBufferPointer { argvPointers in
                        environment.pointers.withUnsafeBufferPointer { envpPointers in
                            var request = opq_spawn_request(
                                path: path, argv: argvPointers.baseAddress, envp: envpPointers.baseAddress,
                                directory: directory, stdin_path: stdinPath,
                                stdout_fd: stdout, stderr_fd: stderr, death_signal: deathSignal, lease_entry: leaseEntry)
                            return opq_spawn(&request)
                        }
                    }
                }
            }
        }
        return pid > 0 ? .success(pid) : .failure(SpawnFailure(errno: -pid))
    }

    /// The current process's environment as `KEY=value` strings, plus (or overriding) `added`.
    public static func environment(adding added: [String: String] = [:]) -> CStringArray {
        var merged: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                merged[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        merged.merge(added) { _, new in new }
        return CStringArray(merged.map { "\($0.key)=\($0.value)" })
    }

    /// Says that this process changed a signal's disposition (a handler, `SIG_IGN`, or back to `SIG_DFL`).
    /// A child resets only the signals that are handled or ignored in its parent, which the spawn reads
    /// from the kernel at most every 100 ms: call this after every such change, so the next child
    /// resets it without waiting (an ignored signal would otherwise reach the command ignored).
    public static func signalDispositionsChanged() { opq_spawn_signal_dispositions_changed() }

    /// Whether a spawn blocks `signal` in the calling thread while the child starts: every signal does,
    /// except SIGCHLD while it has no handler (`SIG_DFL`): another command ending during a spawn then sends
    /// a SIGCHLD the kernel drops, instead of one queued that wakes every signalfd reader of the process.
    public static func blocksDuringSpawn(_ signal: Int32) -> Bool {
        var set = sigset_t()
        opq_spawn_blocked_signals(&set)
        return sigismember(&set, signal) == 1
    }

    /// The signals whose disposition is not `SIG_DFL` in this process (bit `n - 1` for signal `n`), as the
    /// kernel reports them (`/proc/self/status` `SigIgn` | `SigCgt`); every bit when that cannot be read.
    public static var signalsNotAtDefault: UInt64 { opq_spawn_read_signal_dispositions() }

    /// Makes this process a child subreaper: orphaned descendants are re-parented to it rather than to init.
    public static func becomeChildSubreaper() -> Result<Void, SpawnFailure> {
        let result = opq_become_child_subreaper()
        return result < 0 ? .failure(SpawnFailure(errno: -result)) : .success(())
    }

    /// A descriptor for the unreaped child `pid` that polls readable once it has exited (`pidfd_open`),
    /// close-on-exec; the caller closes it. Fails with ENOSYS on kernels before 5.3.
    public static func exitDescriptor(of pid: pid_t) -> Result<Int32, SpawnFailure> {
        let fd = opq_pidfd_open(pid)
        return fd < 0 ? .failure(SpawnFailure(errno: -fd)) : .success(fd)
    }

    /// A pipe whose two ends are close-on-exec (`pipe2` with `O_CLOEXEC`: one system call).
    /// Marks the calling thread as living as long as the worker (a child's parent-death signal follows
    /// the thread that spawned it): ``NicenessLane``-style hops are not needed to spawn from it.
    public static func markThreadLongLived() { opq_spawn_mark_long_lived_thread() }

    /// Whether the calling thread was marked by ``markThreadLongLived()``.
    public static var isThreadLongLived: Bool { opq_spawn_thread_is_long_lived() != 0 }

    public static func makePipe() -> Result<(read: Int32, write: Int32), SpawnFailure> {
        var fds: [Int32] = [-1, -1]
        let result = opq_pipe_cloexec(&fds)
        return result < 0 ? .failure(SpawnFailure(errno: -result)) : .success((fds[0], fds[1]))
    }

    private static func withOptionalCString<T>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
        guard let text else { return body(nil) }
        return text.withCString(body)
    }
}

/// Why a child could not be started: the `errno` of the failed step (fork, chdir, open, exec…).
public struct SpawnFailure: Error, Hashable, Sendable, CustomStringConvertible {
    public let errno: Int32
    public init(errno: Int32) { self.errno = errno }
    public var description: String { String(cString: strerror(errno)) }
}

/// A NULL-terminated array of C strings that frees itself (argv, envp).
// @unchecked Sendable: it owns C memory behind a raw pointer (not Sendable to the compiler) that is written
// only in init and freed in deinit; in between it is read-only, so any thread may pass it to a spawn.
public final class CStringArray: @unchecked Sendable {
    /// The strings, then nil. Never mutated after init, so it may be shared between threads.
    public let pointers: [UnsafeMutablePointer<CChar>?]

    public init(_ strings: [String]) {
        pointers = strings.map { strdup($0) } + [nil]
    }

    deinit {
        for pointer in pointers { free(pointer) }
    }
}
