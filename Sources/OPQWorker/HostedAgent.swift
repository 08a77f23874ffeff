import OPQWire
import ZeroMQ

/// A ``WorkerAgent`` served by another loop's thread (``PollGuest``): the workers of a one-process
/// cluster, whose coordinator's loop polls their sockets, pipes and child monitors with its own sockets.
///
/// The agent does exactly what it does on its own thread (``WorkerAgent/run()``), turn for turn; only the
/// waiting is the host's. So a command's end, its `Finished`, the coordinator's next `Dispatch` and the
/// spawn of the next command happen on one thread without a thread wake-up between them (on a thread of
/// its own, the worker and the coordinator woke each other twice per command).
///
/// Not thread-safe: every call comes from the host's thread (``PollGuest``).
final class HostedAgent: PollGuest {
    private let agent: WorkerAgent
    private let connection: AgentConnection
    /// Called once, on the host's thread, when the agent has ended: why, or success.
    private let ended: (Result<Void, any Error>) -> Void
    /// The agent has ended (its items are inert; it is not served again).
    private var isOver = false

    /// Sets the agent up (``WorkerAgent/open()``); `ended` learns how it ends. With `directLinks` (the
    /// host is the coordinator, whose loop reads them) it connects over a link of them, not a socket.
    init(_ agent: WorkerAgent, directLinks: DirectLinks? = nil, ended: @escaping (Result<Void, any Error>) -> Void) throws {
        self.agent = agent
        connection = try agent.open()
        connection.directLinks = directLinks
        self.ended = ended
    }

    func attach(to poller: inout Poller) {
        connection.begin()
        connection.attach(to: &poller)
    }

    func prepareWait(_ poller: inout Poller) -> Int {
        guard !isOver else { return Int(Int32.max) }
        do {
            return try connection.prepareWait(&poller, now: MonotonicClock.now())
        } catch {
            end(.failure(error), poller: &poller)
            return 0
        }
    }

    func turn(_ poller: inout Poller) -> Bool {
        guard !isOver else { return false }
        do {
            try connection.turn(poller)
        } catch {
            end(.failure(error), poller: &poller)
            return false
        }
        guard connection.done else { return true }
        end(connection.refusal.map { .failure($0) } ?? .success(()), poller: &poller)
        return false
    }

    func hostEnded() {
        guard !isOver else { return }
        // Nothing serves the connection any more: its attempts are stopped and reaped by the agent's own
        // close, and the coordinator, whose loop has ended, learns nothing more.
        agent.stop(handBack: true, reason: "the host loop ended")
        finish(.success(()))
    }

    /// Ends the agent inside a poller that goes on: its items there become inert.
    private func end(_ result: Result<Void, any Error>, poller: inout Poller) {
        connection.detach(from: &poller)
        finish(result)
    }

    /// The agent's own close (no child process outlives it), then `ended` learns how it ended.
    private func finish(_ result: Result<Void, any Error>) {
        isOver = true
        agent.close(connection)
        ended(result)
    }
}
