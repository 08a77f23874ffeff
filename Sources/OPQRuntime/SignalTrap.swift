import Foundation
import OPQSpawn

/// The one way opq's executables react to SIGINT and SIGTERM (and SIGHUP where it means "reload").
///
/// Two styles, one per kind of program:
/// - a command whose loop looks at the time anyway (`opq run`, `opq wait`) installs the counting trap
///   with ``install(_:)`` and reads ``count``: the first signal asks for a graceful stop, the second for
///   an immediate one. The handler only increments a number (async-signal-safe).
/// - a server (`opq-coordinator`, `opq-worker`) calls ``handle(_:_:)``, which runs a closure on a
///   Dispatch queue for each signal; stopping twice must be safe in the closure's target.
public enum SignalTrap {
    nonisolated(unsafe) private static var received: sig_atomic_t = 0

    /// Installs the counting handlers for `signals` (default SIGINT and SIGTERM) and unblocks them (a
    /// parent may have started us with them blocked: the mask is inherited).
    public static func install(_ signals: [Int32] = [SIGINT, SIGTERM]) {
        for number in signals {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = { _ in SignalTrap.received += 1 }
            #else
            action.__sigaction_u.__sa_handler = { _ in SignalTrap.received += 1 }
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(number, &action, nil)
        }
        ChildSpawn.signalDispositionsChanged()
        unblock(signals)
    }

    /// How many trapped signals arrived since ``install(_:)``.
    public static var count: Int { Int(received) }

    /// Runs `handler` with the signal's number each time one of `signals` arrives, on a global Dispatch
    /// queue, until the returned ``Handlers`` are cancelled or released. The signals' default actions
    /// are turned off first, so a signal that arrives before the handler runs never terminates us; and
    /// this returns only once Dispatch watches them (its sources register on a thread of their own,
    /// later: a signal in between would be ignored and lost, e.g. a SIGTERM sent on seeing a server's
    /// start line).
    public static func handle(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) -> Handlers {
        unblock(signals)
        defer { ChildSpawn.signalDispositionsChanged() }
        let registered = DispatchSemaphore(value: 0)
        let sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handler(number) }
            source.setRegistrationHandler { registered.signal() }
            source.resume()
            return source
        }
        // Bounded: Dispatch registers a source within microseconds; never hang a start on it.
        for _ in sources { _ = registered.wait(timeout: .now() + 5) }
        return Handlers(sources)
    }

    /// The usual name of `signal` (`SIGINT`), for logs.
    public static func name(of signal: Int32) -> String {
        switch signal {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        case SIGQUIT: "SIGQUIT"
        default: "signal \(signal)"
        }
    }

    /// Handlers installed by ``handle(_:_:)``; cancelled by ``cancel()`` or when released.
    public final class Handlers {
        private let sources: [any DispatchSourceSignal]

        fileprivate init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }

        /// Stops handling the signals (they stay ignored).
        public func cancel() { sources.forEach { $0.cancel() } }

        deinit { cancel() }
    }

    private static func unblock(_ signals: [Int32]) {
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        sigprocmask(SIG_UNBLOCK, &set, nil)
    }
}
