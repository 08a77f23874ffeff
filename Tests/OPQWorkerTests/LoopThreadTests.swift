import Foundation
import OPQSpawn
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The loops' short time slices (``LoopThread``): the calling thread gets them, the commands it spawns do
/// not, and a thread with a negative niceness is left alone.
@Suite("Loop threads' time slices")
struct LoopThreadTests {
    private static func ownSlice() -> UInt64? {
        (try? String(contentsOfFile: "/proc/thread-self/sched", encoding: .utf8)).flatMap(LoopThread.slice(inSchedText:))
    }

    /// Runs `body` on a thread of its own (the slice and niceness it changes are that thread's) and returns
    /// what it returns.
    private static func onFreshThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: T?
        let thread = Thread {
            result = body()
            done.signal()
        }
        thread.start()
        done.wait()
        return result!
    }

    /// What a command spawned by the calling thread prints of `/proc/self/sched`.
    private static func childSchedText() throws -> String {
        let pipe = try ChildSpawn.makePipe().get()
        let spawned = ChildSpawn.spawn("/bin/cat", arguments: ["/proc/self/sched"], environment: ChildSpawn.environment(),
                                       stdout: pipe.write, stderr: pipe.write)
        close(pipe.write)
        defer { close(pipe.read) }
        let pid = try spawned.get()
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(pipe.read, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            output += buffer[..<count]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return String(decoding: output, as: UTF8.self)
    }

    @Test("the calling thread gets 0.1 ms slices; a command it spawns gets the default slice back")
    func shortSlicesStayWithTheThread() throws {
        let (before, outcome, after, child) = Self.onFreshThread { () -> (UInt64?, LoopThread.Outcome, UInt64?, String?) in
            let before = Self.ownSlice()
            let outcome = LoopThread.preferShortSlices()
            return (before, outcome, Self.ownSlice(), try? Self.childSchedText())
        }
        #expect(outcome == .applied)
        // The kernel shows slices (Linux ≥ 6.6 with scheduler debugging) and honours a thread's own (≥ 6.12,
        // which reports it back): this machine's and CI's.
        guard let before, let after, after != before else { return }
        #expect(after == LoopThread.sliceNanoseconds)
        let childText = try #require(child)
        #expect(LoopThread.slice(inSchedText: childText) == before)
    }

    @Test("a thread with a negative niceness keeps its slice (reset-on-fork would take the niceness from its commands)")
    func negativeNicenessIsLeftAlone() throws {
        let result = Self.onFreshThread { () -> (set: Bool, outcome: LoopThread.Outcome, before: UInt64?, after: UInt64?) in
            // Niceness belongs to the thread on Linux: `setpriority` with id 0 changes the calling thread only.
            guard setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, -1) == 0 else {
                return (false, LoopThread.Outcome.leftAlone, nil, nil)
            }
            let before = Self.ownSlice()
            let outcome = LoopThread.preferShortSlices()
            return (true, outcome, before, Self.ownSlice())
        }
        // Lowering a niceness takes CAP_SYS_NICE (root, as on CI); without it there is nothing to check.
        guard result.set else { return }
        #expect(result.outcome == .leftAlone)
        #expect(result.after == result.before)
    }
}
