#if canImport(Glibc)
import Glibc

/// glibc functions that Swift's `Glibc` module does not import.
///
/// `posix_spawn_file_actions_addchdir_np` and `posix_spawn_file_actions_addclosefrom_np` (glibc ≥ 2.29 and
/// 2.34) are declared only under `_GNU_SOURCE`, which the `Glibc` module is not built with, and `prctl` is
/// variadic, which Swift cannot call. They are looked up once with `dlsym` and called through C function
/// pointers. (A small C shim target would do the same; this avoids one more target.)
enum LinuxExtensions {
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private typealias AddClosefrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    // prctl(int option, ...) reads up to four `unsigned long` arguments; on x86-64 and AArch64 Linux an
    // integer-only variadic call passes them exactly as this fixed prototype does.
    private typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32

    private static func symbol<T>(_ name: String, as type: T.Type) -> T? {
        guard let pointer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(pointer, to: type)
    }

    private static let addChdirFunction = symbol("posix_spawn_file_actions_addchdir_np", as: AddChdir.self)
    private static let addClosefromFunction = symbol("posix_spawn_file_actions_addclosefrom_np", as: AddClosefrom.self)
    private static let prctlFunction = symbol("prctl", as: Prctl.self)

    /// `PR_SET_CHILD_SUBREAPER` from `<linux/prctl.h>`.
    private static let setChildSubreaper: Int32 = 36

    /// Adds "change directory to `path`" to `actions` (run in the child before `exec`).
    static func addChdir(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: String) throws(SystemError) {
        guard let function = addChdirFunction else {
            throw SystemError(call: "posix_spawn_file_actions_addchdir_np", errno: ENOSYS, detail: "glibc 2.29 or later is needed")
        }
        try SystemCall.checkReturned("posix_spawn_file_actions_addchdir_np", path) { function(actions, path) }
    }

    /// Adds "close every descriptor from `lowest` up" to `actions`; does nothing on a glibc without it
    /// (our own descriptors are all close-on-exec anyway).
    static func addClosefrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ lowest: Int32) throws(SystemError) {
        guard let function = addClosefromFunction else { return }
        try SystemCall.checkReturned("posix_spawn_file_actions_addclosefrom_np") { function(actions, lowest) }
    }

    /// Makes this process a child subreaper: orphaned descendants are re-parented to it rather than to
    /// init, so the worker can reap every member of an operation's process group.
    static func becomeChildSubreaper() throws(SystemError) {
        guard let function = prctlFunction else {
            throw SystemError(call: "prctl", errno: ENOSYS, detail: "PR_SET_CHILD_SUBREAPER")
        }
        try SystemCall.check("prctl", "PR_SET_CHILD_SUBREAPER") { function(setChildSubreaper, 1, 0, 0, 0) }
    }
}
#endif
