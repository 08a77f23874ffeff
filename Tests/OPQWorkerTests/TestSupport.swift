import Foundation
import OPQCore
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#endif

/// Collects a runner's or operation's events and lets tests await them with a deadline, without
/// blocking a thread (blocked test threads would starve the Dispatch pool the queue runs on).
final class EventLog: @unchecked Sendable {
    private struct Waiter {
        let id: Int
        let predicate: ([AttemptEvent]) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    private let lock = NSLock()
    private var events: [AttemptEvent] = []
    /// When each event reached the sink (monotonic seconds, ``now()``), on the thread that delivered it:
    /// deadlines are checked against these, not against when an awaiting task got a thread back (under
    /// a full `swift test` the cooperative pool can be busy for seconds).
    private var arrivals: [Double] = []
    private var waiters: [Waiter] = []
    private var nextWaiter = 0

    var sink: AttemptEventSink { { [self] event in record(event) } }

    var all: [AttemptEvent] { lock.withLock { events } }

    /// Monotonic seconds, the clock of ``arrivals``.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// When the completion of `key` reached the sink, if it has.
    func completionArrival(_ key: AttemptKey) -> Double? {
        lock.withLock { events.indices.first { Self.completion(in: events[$0], key) != nil }.map { arrivals[$0] } }
    }

    private func record(_ event: AttemptEvent) {
        let arrival = Self.now()
        let ready: [Waiter] = lock.withLock {
            events.append(event)
            arrivals.append(arrival)
            let ready = waiters.filter { $0.predicate(events) }
            waiters.removeAll { waiter in ready.contains { $0.id == waiter.id } }
            return ready
        }
        for waiter in ready { waiter.continuation.resume(returning: true) }
    }

    /// Waits until `predicate` holds for the events so far, or `timeout` passes; returns whether it held.
    func wait(timeout: Double = 10, until predicate: @escaping ([AttemptEvent]) -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            let id: Int? = lock.withLock {
                if predicate(events) { return nil }
                nextWaiter += 1
                waiters.append(Waiter(id: nextWaiter, predicate: predicate, continuation: continuation))
                return nextWaiter
            }
            guard let id else { return continuation.resume(returning: true) }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
                let expired = lock.withLock {
                    let expired = waiters.first { $0.id == id }
                    waiters.removeAll { $0.id == id }
                    return expired
                }
                expired?.continuation.resume(returning: false)
            }
        }
    }

    func completion(_ key: AttemptKey, timeout: Double = 10) async -> Completion? {
        _ = await wait(timeout: timeout) { events in events.contains { Self.completion(in: $0, key) != nil } }
        return all.lazy.compactMap { Self.completion(in: $0, key) }.first
    }

    func started(_ key: AttemptKey, timeout: Double = 10) async -> Bool {
        await wait(timeout: timeout) { $0.contains { if case .started(key, _) = $0 { true } else { false } } }
    }

    private static func completion(in event: AttemptEvent, _ key: AttemptKey) -> Completion? {
        if case .finished(let completion) = event, completion.key == key { completion } else { nil }
    }
}

/// Process group ids spawned by a test, killed when the test ends whatever happened.
final class SpawnedGroups: @unchecked Sendable {
    private let condition = NSCondition()
    private var pgids: [pid_t] = []

    var observer: @Sendable (pid_t) -> Void { { [self] pid in condition.withLock { pgids.append(pid); condition.broadcast() } } }

    var all: [pid_t] { condition.withLock { pgids } }

    func killAll() {
        for pgid in condition.withLock({ pgids }) { kill(-pgid, SIGKILL) }
    }
}

/// True if any process (even a zombie) is left in process group `pgid`.
func groupIsAlive(_ pgid: pid_t) -> Bool {
    kill(-pgid, 0) == 0 || errno != ESRCH
}

/// Runs `operation` on its own queue with an event log; returns the log.
func start(_ operation: AttemptOperation) -> (EventLog, OperationQueue) {
    let log = EventLog()
    operation.sink = log.sink
    let queue = OperationQueue()
    queue.addOperation(operation)
    return (log, queue)
}

/// Runs commands to completion through a CommandOperation and returns the completion.
func runCommands(
    _ commands: [Command], qos: OPQCore.QualityOfService = .default, timeout: Double? = nil,
    grace: Double = 10, deadline: Double = 20
) async -> Completion? {
    let key = AttemptKey(OperationID(1), attempt: 1)
    let operation = CommandOperation(key: key, commands: commands, qualityOfService: qos, timeout: timeout, killGracePeriod: grace)
    let groups = SpawnedGroups()
    operation.onSpawned = groups.observer
    defer { groups.killAll() }
    let (log, _) = start(operation)
    return await log.completion(key, timeout: deadline)
}

extension Completion {
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// A fresh temporary directory, removed by the caller.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("opq-worker-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A named pipe a test's child writes one line to (e.g. a pid), read without blocking a thread.
final class FIFO: @unchecked Sendable {
    let path: String
    private let fd: Int32

    init(in directory: URL) throws {
        path = directory.appendingPathComponent("fifo-\(UUID().uuidString)").path
        guard mkfifo(path, 0o600) == 0 else { throw SystemError(call: "mkfifo", errno: errno, detail: path) }
        // O_RDWR: opening does not wait for a writer, and EOF never comes between writers.
        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError(call: "open", errno: errno, detail: path) }
    }

    deinit { close(fd) }

    /// The first line written, or nil after `timeout` seconds.
    func line(timeout: Double = 10) async -> String? {
        let queue = DispatchQueue(label: "fifo")
        let source = SourceBox(DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue))
        let once = Once()
        return await withCheckedContinuation { continuation in
            var text = ""
            source.value.setEventHandler { [fd] in
                var buffer = [UInt8](repeating: 0, count: 256)
                let count = read(fd, &buffer, buffer.count)
                if count > 0 { text += String(decoding: buffer[..<count], as: UTF8.self) }
                if let newline = text.firstIndex(of: "\n"), once.claim() {
                    source.value.cancel()
                    continuation.resume(returning: String(text[..<newline]))
                }
            }
            source.value.resume()
            queue.asyncAfter(deadline: .now() + timeout) {
                if once.claim() {
                    source.value.cancel()
                    continuation.resume(returning: nil)
                }
            }
        }
    }
}

private final class SourceBox: @unchecked Sendable {
    let value: DispatchSourceRead
    init(_ value: DispatchSourceRead) { self.value = value }
}

/// True for the first caller only.
final class Once: @unchecked Sendable {
    private let lock = NSLock()
    private var claimed = false
    func claim() -> Bool { lock.withLock { defer { claimed = true }; return !claimed } }
}

/// True if process `pid` exists (even as a zombie).
func processExists(_ pid: pid_t) -> Bool {
    kill(pid, 0) == 0 || errno != ESRCH
}

/// Raised once from any thread; awaited with a deadline without blocking a thread.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var raised = false
    private var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
    private var nextWaiter = 0

    var isRaised: Bool { lock.withLock { raised } }

    func raise() {
        let waiting: [CheckedContinuation<Bool, Never>] = lock.withLock {
            raised = true
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for waiter in waiting { waiter.resume(returning: true) }
    }

    /// Whether the flag is raised within `timeout` seconds.
    func wait(timeout: Double = 10) async -> Bool {
        await withCheckedContinuation { continuation in
            let id: Int? = lock.withLock {
                if raised { return nil }
                nextWaiter += 1
                waiters[nextWaiter] = continuation
                return nextWaiter
            }
            guard let id else { return continuation.resume(returning: true) }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
                lock.withLock { waiters.removeValue(forKey: id) }?.resume(returning: false)
            }
        }
    }
}
