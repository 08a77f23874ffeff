import Foundation
import OPQRuntime
import Testing

@Suite("Signal trap")
struct SignalTrapTests {
    /// As a supervisor sends SIGTERM on seeing a server's start line. Before `handle` waited for Dispatch
    /// to register its sources, such a signal could come while it was ignored and not yet watched: lost,
    /// and the server never stopped (seen with opq-coordinator under load, 3 of 30 starts). Once per
    /// process: Dispatch does not watch a signal again after its source was cancelled.
    @Test("A signal sent the moment handle(_:_:) returns reaches the handler")
    func aSignalRightAfterHandleIsHandled() {
        let arrived = DispatchSemaphore(value: 0)
        let handlers = SignalTrap.handle([SIGUSR2]) { _ in arrived.signal() }
        defer { handlers.cancel() }
        kill(getpid(), SIGUSR2)
        #expect(arrived.wait(timeout: .now() + 10) == .success, "SIGUSR2 was not handled within 10 s")
    }
}
