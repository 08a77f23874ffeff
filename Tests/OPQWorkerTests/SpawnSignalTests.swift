import Foundation
import OPQCore
import OPQSpawn
import Testing
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#endif

/// A command starts with every signal at its default action and none blocked, whatever the worker
/// handles or ignores — also right after the worker changed a disposition (opq_spawn resets only the
/// signals the worker does not leave at default, from a snapshot it must not keep past such a change).
@Suite("Spawned commands' signals", .serialized)
struct SpawnSignalTests {
    /// The command's view of itself: its /proc/self/status (`cat` installs no handler of its own; grep does).
    private static let report = Command(["cat", "/proc/self/status"])
    private static let clean = ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000", "SigCgt:\t0000000000000000"]

    /// The `SigBlk`, `SigIgn` and `SigCgt` lines of a status text.
    private static func signalLines(_ status: String) -> [String] {
        status.split(separator: "\n").filter { ["SigBlk:", "SigIgn:", "SigCgt:"].contains($0.prefix(7)) }.map(String.init)
    }

    @Test("handled and ignored signals of the worker are at default in a command, and its mask is empty")
    func defaultDispositions() async throws {
        // SIGPIPE ignored (and left so: other tests' processes may rely on it), SIGURG handled (its default
        // action is to ignore, so a handler is harmless to every other test).
        signal(SIGPIPE, SIG_IGN)
        var handler = sigaction()
        handler.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&handler.sa_mask)
        var previous = sigaction()
        sigaction(SIGURG, &handler, &previous)
        defer { sigaction(SIGURG, &previous, nil); ChildSpawn.signalDispositionsChanged() }
        ChildSpawn.signalDispositionsChanged()
        let worker = ChildSpawn.signalsNotAtDefault
        #expect(worker & (1 << (UInt64(SIGPIPE) - 1)) != 0)
        #expect(worker & (1 << (UInt64(SIGURG) - 1)) != 0)

        let completion = try #require(await runCommands([Self.report]))
        #expect(completion.report == .succeeded)
        #expect(Self.signalLines(completion.stdoutText) == Self.clean)
    }

    @Test("SIGCHLD stays unblocked during a spawn while it has no handler, and is blocked once it has one")
    func childSignalDuringSpawn() async throws {
        var previous = sigaction()
        sigaction(SIGCHLD, nil, &previous)
        let hasHandler = previous.sa_flags & SA_SIGINFO != 0
            || unsafeBitCast(previous.__sigaction_handler.sa_handler, to: Int.self) != unsafeBitCast(SIG_DFL, to: Int.self)
        #expect(ChildSpawn.blocksDuringSpawn(SIGCHLD) == hasHandler)
        #expect(ChildSpawn.blocksDuringSpawn(SIGTERM) && ChildSpawn.blocksDuringSpawn(SIGINT) && ChildSpawn.blocksDuringSpawn(SIGURG))

        // A handler (restarting, so no other test's system call is cut short): blocked, so it can never run
        // in a child that shares this process's stack.
        var handler = sigaction()
        handler.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&handler.sa_mask)
        handler.sa_flags = SA_RESTART
        sigaction(SIGCHLD, &handler, nil)
        let blockedWithHandler = ChildSpawn.blocksDuringSpawn(SIGCHLD)
        sigaction(SIGCHLD, &previous, nil)
        #expect(blockedWithHandler)
        #expect(ChildSpawn.blocksDuringSpawn(SIGCHLD) == hasHandler)

        // Either way the command starts with nothing blocked and every signal at default.
        let completion = try #require(await runCommands([Self.report]))
        #expect(Self.signalLines(completion.stdoutText) == Self.clean)
    }

    @Test("a signal the worker ignores just before a spawn is not inherited by the command")
    func changeBetweenSpawns() async throws {
        // One spawn first, so the parent's snapshot of dispositions is fresh when SIGWINCH is ignored.
        _ = try #require(await runCommands([Self.report]))
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        sigemptyset(&ignore.sa_mask)
        var previous = sigaction()
        sigaction(SIGWINCH, &ignore, &previous)
        ChildSpawn.signalDispositionsChanged()
        defer { sigaction(SIGWINCH, &previous, nil); ChildSpawn.signalDispositionsChanged() }
        let completion = try #require(await runCommands([Self.report]))
        #expect(Self.signalLines(completion.stdoutText) == Self.clean)
    }
}
