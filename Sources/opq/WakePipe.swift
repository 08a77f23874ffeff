import Foundation
import OPQClient
import OPQSpawn

/// A self-pipe that turns signals into something a wait can block on: SIGINT/SIGTERM (after the counting
/// handler ``SignalTrap`` installed, which runs first) and, while an embedded cluster runs, SIGCHLD write
/// one byte to it, and every wait of
/// the CLI (``CoordinatorClient/wait(for:timeout:interruption:)``, watches) watches its read end next to
/// the coordinator's socket. So a Ctrl-C or a crashed local process ends a wait at once, without
/// waking up every fraction of a second to look.
enum WakePipe {
    nonisolated(unsafe) private static var readEnd: Int32 = -1
    nonisolated(unsafe) private static var writeEnd: Int32 = -1
    /// The handlers in place for SIGINT and SIGTERM before ours (``SignalTrap``'s counter), called first.
    nonisolated(unsafe) private static var previousInterrupt: (@convention(c) (Int32) -> Void)?
    nonisolated(unsafe) private static var previousTerminate: (@convention(c) (Int32) -> Void)?
    nonisolated(unsafe) private static var chained = false

    /// Creates the pipe (once; both ends non-blocking and close-on-exec).
    static func open() {
        guard readEnd < 0 else { return }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// Writes one byte; async-signal-safe (a full pipe already wakes its reader).
    static func poke() {
        guard writeEnd >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the pipe. Call before looking at what a wake-up may mean, so a later one is not lost.
    static func drain() {
        guard readEnd >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }

    /// Makes SIGINT and SIGTERM poke the pipe too, after the handler installed for them (``SignalTrap``'s
    /// counter), once. A signal left at its default action or ignored is left alone.
    private static func chainSignals() {
        guard !chained else { return }
        chained = true
        for number in [SIGINT, SIGTERM] {
            var current = sigaction()
            sigaction(number, nil, &current)
            guard let handler = current.__sigaction_handler.sa_handler, unsafeBitCast(handler, to: Int.self) > 1 else { continue }
            if number == SIGINT { previousInterrupt = handler } else { previousTerminate = handler }
            var action = current
            action.__sigaction_handler.sa_handler = { number in
                (number == SIGINT ? WakePipe.previousInterrupt : WakePipe.previousTerminate)?(number)
                WakePipe.poke()
            }
            sigaction(number, &action, nil)
        }
        ChildSpawn.signalDispositionsChanged()
    }

    /// Also wakes on SIGCHLD (a process of the embedded cluster exited); the handler only pokes, the
    /// process is reaped by its owner.
    static func wakeOnChildExit() {
        open()
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in WakePipe.poke() }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART | SA_NOCLDSTOP
        sigaction(SIGCHLD, &action, nil)
        ChildSpawn.signalDispositionsChanged()
    }

    /// An interruption of a client wait: the pipe's read end, and `shouldStop` asked after draining it.
    static func interruption(_ shouldStop: @escaping () -> Bool) -> Interruption? {
        open()
        chainSignals()
        guard readEnd >= 0 else { return nil }
        return Interruption(fileDescriptor: readEnd) {
            drain()
            return shouldStop()
        }
    }
}
