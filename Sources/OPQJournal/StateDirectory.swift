#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The coordinator's state directory (`--state DIR`): the journal and a lock file that keeps a second
/// coordinator out. The lock is an `flock` held for the life of the process; the kernel drops it when
/// the process ends, however it ends (a `kill -9` included), so there is no stale lock to clean up.
/// The lock file also says who holds it (its pid), for the message a second coordinator prints. It can be
/// deleted from under its holder, so it is only the first guard: the journal's own lock (``Journal``,
/// held on the journal file's inode) is the one that cannot be removed.
public final class StateDirectory {
    /// The directory.
    public let path: String
    /// The journal's path inside it.
    public var journalPath: String { path + "/journal.sqlite" }
    private var lockDescriptor: Int32 = -1

    /// The default: `$XDG_STATE_HOME/opq`, else `~/.local/state/opq`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/opq" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/state/opq"
    }

    /// Creates the directory if needed (mode 0700: it holds the commands opq runs) and takes its lock.
    /// Throws ``JournalError/locked(path:holder:)`` when another process holds it.
    public init(path: String) throws(JournalError) {
        self.path = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        do {
            try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw .directory(path: self.path, problem: (error as NSError).localizedDescription)
        }
        let lockPath = self.path + "/lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .directory(path: self.path, problem: "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let problem = errno
            let holder = try? String(contentsOfFile: lockPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            close(descriptor)
            if problem == EWOULDBLOCK { throw .locked(path: self.path, holder: holder.flatMap { $0.isEmpty ? nil : $0 }) }
            throw .directory(path: self.path, problem: "cannot lock \(lockPath): \(String(cString: strerror(problem)))")
        }
        lockDescriptor = descriptor
        // Who holds it, for the message a second coordinator prints.
        let note = Array("pid \(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = note.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// Releases the lock (also released when the process ends).
    public func unlock() {
        guard lockDescriptor >= 0 else { return }
        // Explicitly: a child process between fork and exec may still share the descriptor.
        _ = flock(lockDescriptor, LOCK_UN)
        close(lockDescriptor)
        lockDescriptor = -1
    }

    deinit { unlock() }
}
