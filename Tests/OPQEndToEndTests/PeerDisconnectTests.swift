import Foundation
import OPQWire
import Testing
import ZeroMQ

/// Peers that flood the coordinator and go away while it is busy (issue 11, `CoordinatorFuzzTests` with
/// abrupt disconnects; docs/known-issues.md). The coordinator's main thread is held still without
/// stopping its I/O threads: its log is a FIFO the test stops reading, so the loop blocks in its next log
/// write while libzmq keeps taking connections and bytes.
@Suite(.serialized) struct PeerDisconnectTests {
    /// A client fills its connection's pipe (the coordinator is not reading), then hangs up. libzmq 4.3.4
    /// keeps such an engine until the pipe drains, with its read error noted; with `ZMQ_HEARTBEAT_IVL` on
    /// the clients socket the coordinator aborted once its loop ran again (`Assertion failed: !_io_error
    /// (src/stream_engine_base.cpp:331)`, docs/known-issues.md).
    @Test func aClientThatFloodsAndHangsUpWhileTheCoordinatorIsBusyDoesNotCrashIt() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let log = try LogFIFO(path: cluster.path("coordinator.log"))
        defer { log.close() }
        try cluster.startCoordinator(["--log-level", "info"])
        let coordinator = try #require(cluster.coordinator)
        let context = try Context()
        defer { context.close() }
        let probe = try PruneTests.RawClient(context, endpoint: cluster.clientsEndpoint)
        try probe.send(1) { $0.listQueues = Opq_V1_ListQueues() }
        #expect(try probe.reply(to: 1, within: 30) != nil, "the coordinator did not answer at start\n\(log.text)")

        // Hold the loop: malformed requests are logged (info) until the log pipe is full and a write blocks.
        log.pause()
        let noise = try context.socket(.dealer)
        defer { noise.close() }
        try noise.set(.linger, 0)
        try noise.connect(cluster.clientsEndpoint)
        let holding = Date().addingTimeInterval(30)
        var unchanged = 0, lastBuffered = -1
        while unchanged < 50 {
            try #require(Date() < holding, "the coordinator's log never filled its pipe (\(log.buffered) bytes)")
            _ = try noise.send([[0x00, 0x01, 0x02]], flags: .dontWait)
            try #require(coordinator.waitForExit(within: 0.01) == nil, "the coordinator exited\n\(log.text)")
            let buffered = log.buffered
            unchanged = buffered == lastBuffered && buffered > 0 ? unchanged + 1 : 0
            lastBuffered = buffered
        }

        // The flood: until neither our queue nor the coordinator's pipe for this connection takes more.
        let flooder = try context.socket(.dealer)
        try flooder.set(.linger, 0)
        try flooder.set(.sendTimeout, 200)
        try flooder.connect(cluster.clientsEndpoint)
        let request = try Frames.encode(Opq_V1_ClientRequest.request(7) { $0.listQueues = Opq_V1_ListQueues() })
        var flooded = 0
        let flooding = Date().addingTimeInterval(60)
        while try flooder.send(request) == .sent {
            flooded += 1
            try #require(Date() < flooding, "the flood was never held back (\(flooded) sent)")
        }
        #expect(flooded > 1_000, "only \(flooded) requests were taken: the pipe cannot be full")
        flooder.close()

        // The engine of the closed connection now waits for the pipe to drain; a heartbeat (1 s) would
        // write to it in the meantime.
        let status = coordinator.waitForExit(within: 3)
        log.resume()
        #expect(status == nil, "the coordinator died (wait status \(status ?? 0)) after a flooding client hung up\n\(log.tail)")
        try probe.send(2) { $0.listQueues = Opq_V1_ListQueues() }
        #expect(try probe.reply(to: 2, within: 60) != nil, "the coordinator did not answer after the flood\n\(log.tail)")
        #expect(coordinator.isRunning, "the coordinator exited\n\(log.tail)")
    }
}

/// A FIFO in place of a child's log file, read by a thread that can be paused: while paused, the child
/// blocks in its next write once the pipe's buffer (64 KiB) is full.
final class LogFIFO: @unchecked Sendable {
    private let fd: Int32
    private let state = NSCondition()
    private var paused = false
    private var closed = false
    private var collected = Data()
    private var thread: Thread?

    /// Creates the FIFO at `path` and opens it for reading (a writer that opens it later does not block).
    init(path: String) throws {
        guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let thread = Thread { [self] in run() }
        thread.stackSize = 256 * 1024
        self.thread = thread
        thread.start()
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            state.lock()
            while paused && !closed { state.wait() }
            if closed {
                state.unlock()
                Glibc.close(fd)  // here, not in close(): never while this thread may still read it
                return
            }
            state.unlock()
            var item = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&item, 1, 50) > 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            state.lock()
            if count > 0 { collected.append(contentsOf: buffer[..<count]) }
            state.unlock()
        }
    }

    /// Stops reading (the writer fills the pipe, then blocks).
    func pause() {
        state.lock()
        paused = true
        state.unlock()
    }

    /// Reads again.
    func resume() {
        state.lock()
        paused = false
        state.broadcast()
        state.unlock()
    }

    /// Bytes written into the pipe and not read yet.
    var buffered: Int {
        var count: Int32 = 0
        _ = ioctl(fd, UInt(FIONREAD), &count)
        return Int(count)
    }

    /// What was read so far.
    var text: String {
        state.lock()
        defer { state.unlock() }
        return String(decoding: collected, as: UTF8.self)
    }

    /// The last lines read (for failure messages).
    var tail: String { text.split(separator: "\n").suffix(30).joined(separator: "\n") }

    func close() {
        state.lock()
        closed = true
        state.broadcast()
        state.unlock()
        thread = nil
    }
}
