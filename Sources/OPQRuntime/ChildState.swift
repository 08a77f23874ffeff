import Foundation

/// What a ``ChildProcess``'s threads learn: its wait status, resource usage and captured output, under
/// one condition that every change broadcasts. Held by the threads, not the process object, so the
/// object can be released (and kill the child) while they run.
// @unchecked Sendable: every mutable field is read and changed only under `condition`.
final class ChildState: @unchecked Sendable {
    // @unchecked: every stored var is read and written only with `condition` locked.
    let condition = NSCondition()
    var status: Int32?
    var peakKilobytes: Int?
    var output: [UInt8] = []
    /// Pipes still being read (their end of file not seen yet).
    var openReaders: Int
    /// The write end of the child's standard input pipe, until closed (-1: none).
    var input: Int32 = -1

    init(readers: Int) { openReaders = readers }

    func withLock<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// One thread blocked in `wait4` until `pid` exits.
    func startReaper(_ pid: pid_t) {
        let reaper = Thread { [self] in
            var raw: Int32 = 0
            var usage = rusage()
            while wait4(pid, &raw, 0, &usage) < 0 && errno == EINTR {}
            ChildRegistry.remove(pid)
            withLock {
                peakKilobytes = usage.ru_maxrss
                status = raw
                condition.broadcast()
            }
        }
        reaper.stackSize = 128 * 1024
        reaper.start()
    }

    /// One thread reading `fd` into ``output`` until end of file, then closing it.
    func startReader(_ fd: Int32) {
        let reader = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                withLock {
                    output += buffer[..<count]
                    condition.broadcast()
                }
            }
            close(fd)
            withLock {
                openReaders -= 1
                condition.broadcast()
            }
        }
        reader.stackSize = 256 * 1024
        reader.start()
    }
}

/// The pids of every running ``ChildProcess``, for ``ChildProcess/killAll()``.
enum ChildRegistry {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var running = Set<pid_t>()

    static func add(_ pid: pid_t) { _ = lock.withLock { running.insert(pid) } }
    static func remove(_ pid: pid_t) { _ = lock.withLock { running.remove(pid) } }

    static func killAll() {
        for pid in lock.withLock({ running }) {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
        }
    }
}
