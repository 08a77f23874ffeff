#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed C library call: which call, its errno, and what it was doing.
///
/// Every libc call in `OPQWorker` that can fail goes through ``SystemCall``, so every failure reads the
/// same way: `execve failed: No such file or directory (ENOENT) — running 'nosuch'`.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The C function that failed, e.g. `execve`.
    public let call: String
    /// The error number it reported.
    public let errno: Int32
    /// What the call was for (a path, a program), when that helps the reader act.
    public let detail: String?

    /// Creates an error for `call` with error number `errno`.
    public init(call: String, errno: Int32, detail: String? = nil) {
        self.call = call
        self.errno = errno
        self.detail = detail
    }

    /// The symbolic name of the error number (`ENOENT`), or its number.
    public var errnoName: String { SystemError.names[errno] ?? "errno \(errno)" }

    /// `strerror`'s text for the error number.
    public var message: String { String(cString: strerror(errno)) }

    public var description: String {
        let base = "\(call) failed: \(message) (\(errnoName))"
        return detail.map { "\(base) — \($0)" } ?? base
    }

    private static let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", ESRCH: "ESRCH", EINTR: "EINTR", EIO: "EIO", E2BIG: "E2BIG",
        ENOEXEC: "ENOEXEC", EBADF: "EBADF", ECHILD: "ECHILD", EAGAIN: "EAGAIN", ENOMEM: "ENOMEM",
        EACCES: "EACCES", EFAULT: "EFAULT", EBUSY: "EBUSY", EEXIST: "EEXIST", ENOTDIR: "ENOTDIR",
        EISDIR: "EISDIR", EINVAL: "EINVAL", ENFILE: "ENFILE", EMFILE: "EMFILE", ETXTBSY: "ETXTBSY",
        ENOSPC: "ENOSPC", EPIPE: "EPIPE", ENAMETOOLONG: "ENAMETOOLONG", ELOOP: "ELOOP", ENOSYS: "ENOSYS",
    ]
}

/// The one path for libc calls in this module: failures become ``SystemError`` values, `EINTR` is retried.
enum SystemCall {
    /// Runs a call that returns -1 and sets `errno` on failure, retrying while it fails with `EINTR`.
    @discardableResult
    static func check<T: FixedWidthInteger>(
        _ call: String, _ detail: @autoclosure () -> String? = nil, _ body: () -> T
    ) throws(SystemError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw SystemError(call: call, errno: code, detail: detail())
        }
    }
}
