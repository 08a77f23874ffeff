import Foundation

/// SIGINT/SIGTERM as a counter the command's loop polls: the first asks for a graceful stop, the
/// second for an immediate one. The handler only stores a number (async-signal-safe).
enum SignalTrap {
    nonisolated(unsafe) private static var received: sig_atomic_t = 0

    /// Installs the handlers.
    static func install() {
        for number in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { _ in SignalTrap.received += 1 }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(number, &action, nil)
        }
        // A parent may have started us with these blocked (the mask is inherited): unblock them.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGTERM)
        sigprocmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// How many signals arrived since ``install()``.
    static var count: Int { Int(received) }
}
