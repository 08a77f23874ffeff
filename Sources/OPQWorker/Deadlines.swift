import Foundation

/// Runs actions at deadlines on one dedicated thread.
///
/// Kill escalation (SIGKILL after the grace period) and attempt timeouts must fire on time even when
/// Dispatch's shared threads are all busy — a blocking handler, or a host program that blocks them, would
/// otherwise delay a SIGKILL by seconds. Entries are few (one per stopping or timed attempt), so a sorted
/// array is enough.
// @unchecked Sendable: `entries` is guarded by `condition`; the deadline thread owns nothing else.
final class Deadlines: @unchecked Sendable {
    /// The worker process's one deadline thread.
    static let shared = Deadlines()

    /// A scheduled action; cancelling it before its deadline means it never runs (it is taken out of the
    /// list; one the deadline thread has already taken runs — it is due).
    final class Entry: Sendable {
        fileprivate let deadline: UInt64
        fileprivate let action: @Sendable () -> Void

        fileprivate init(deadline: UInt64, action: @escaping @Sendable () -> Void) {
            self.deadline = deadline
            self.action = action
        }
    }

    private let condition = NSCondition()
    private var entries: [Entry] = []  // sorted by deadline

    private init() {
        let thread = Thread { [self] in serve() }
        thread.name = "opq-deadlines"
        thread.stackSize = 128 * 1024
        thread.start()
    }

    /// Runs `action` `seconds` from now (monotonic clock).
    @discardableResult
    func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Entry {
        let entry = Entry(deadline: DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9), action: action)
        condition.withLock {
            let position = entries.firstIndex { $0.deadline > entry.deadline } ?? entries.count
            entries.insert(entry, at: position)
            condition.signal()
        }
        return entry
    }

    /// Cancels `entry` if it has not run yet.
    func cancel(_ entry: Entry) {
        condition.withLock { entries.removeAll { $0 === entry } }
    }

    private func serve() {
        while true {
            let due: Entry = condition.withLock {
                while true {
                    guard let first = entries.first else {
                        condition.wait()
                        continue
                    }
                    let now = DispatchTime.now().uptimeNanoseconds
                    if first.deadline <= now {
                        entries.removeFirst()
                        return first
                    }
                    _ = condition.wait(until: Date(timeIntervalSinceNow: Double(first.deadline - now) / 1e9))
                }
            }
            due.action()
        }
    }
}
