/// A loop that runs on another loop's thread: the host polls the guest's sockets and descriptors along
/// with its own, in one `zmq_poll`, and hands the guest a turn after each wait.
///
/// Why: two loops on two threads that answer each other (a coordinator and the workers inside its
/// process) pay a thread wake-up for every message between them — tens of microseconds each on a virtual
/// machine whose idle cores halt — and a command's end → next dispatch round trip is two of them. On one
/// thread the message is read by the next poll, which returns at once.
///
/// The protocol between host and guest, all on the host's thread:
/// 1. ``attach(to:)`` once, before the host's first wait: the guest adds its items to the host's poller
///    and remembers their indices (the host never removes or moves items while the guest is attached).
/// 2. Before each wait, ``prepareWait(_:)``: the guest updates its items (a socket that came or went,
///    the events it waits for) and says how long the host may wait on its behalf.
/// 3. After each wait, ``turn(_:)`` with the poller as polled: the guest does its work and says whether it
///    goes on. A guest that ended has set its items to nothing (never ready) and is not called again.
/// 4. If the host's loop ends first, ``hostEnded()``: the guest ends at once and cleans up.
public protocol PollGuest: AnyObject {
    /// Adds the guest's items to `poller` (the host's); called once, on the host's thread.
    func attach(to poller: inout Poller)

    /// Updates the guest's items in `poller` before a wait; returns the longest the host may wait for the
    /// guest, in milliseconds (0: poll without waiting; never negative).
    func prepareWait(_ poller: inout Poller) -> Int

    /// The guest's turn after a wait (`poller` holds the results). Returns false once the guest has ended;
    /// its items in `poller` are then inert.
    func turn(_ poller: inout Poller) -> Bool

    /// The host's loop has ended before the guest did: end now (nothing will be polled for it again).
    func hostEnded()
}
