import Foundation
import OPQCore
import OPQWire
import Testing
import ZeroMQ
@testable import OPQCoordinator

/// The coordinator shell's pure parts that bound what a peer can make it keep.
@Suite struct CoordinatorBoundsTests {
    static func progress(_ bytes: Int, operation: UInt64 = 1) -> LoggedEvent.Kind {
        .progress(.with {
            $0.operation = operation
            $0.attempt = 1
            $0.message = String(repeating: "x", count: bytes)
        })
    }

    @Test func theEventLogIsBoundedByBytesAsWellAsByCount() {
        var log = EventLog(capacity: 100_000, byteBudget: 1 << 20)
        for _ in 0..<300 { _ = log.append(Self.progress(64 << 10)) }
        #expect(log.bytes <= 1 << 20, "kept \(log.bytes) bytes")
        #expect(log.count < 20 && log.count >= 1)
        #expect(log.lastSequence == 300)
        #expect(log.events(after: 299)?.map(\.sequence) == [300], "the newest events can still be replayed")
        #expect(log.events(after: 1) == nil, "a watcher from before the kept ones gets a snapshot")
    }

    @Test func theNewestEventIsKeptEvenWhenItAloneIsOverTheBudget() {
        var log = EventLog(capacity: 10, byteBudget: 100)
        _ = log.append(Self.progress(10_000))
        _ = log.append(Self.progress(10_000))
        #expect(log.count == 1 && log.events(after: 1)?.map(\.sequence) == [2])
    }

    @Test func theEventLogStillHonoursItsCount() {
        var log = EventLog(capacity: 3)
        for _ in 0..<10 { _ = log.append(.jobFinished(JobID(1))) }
        #expect(log.count == 3 && log.events(after: 7)?.count == 3 && log.events(after: 6) == nil)
    }

    // MARK: - ClientOutbox

    static let alice: [UInt8] = Array("alice".utf8)
    static let bob: [UInt8] = Array("bob".utf8)

    static func message(_ identity: [UInt8], _ k: Int) -> [[UInt8]] { [identity, Array("reply \(k)".utf8)] }

    @Test func aReplyTheSocketCannotTakeIsKeptAndSentInOrderLater() {
        var outbox = ClientOutbox(maxMessages: 3, maxBytes: 1 << 20)
        for k in 0..<5 { outbox.keep(Self.message(Self.alice, k)) }
        #expect(outbox.count(for: Self.alice) == 5, "replies to applied requests are kept beyond the limit")
        #expect(outbox.isFull(Self.alice) && !outbox.isFull(Self.bob))

        var sent: [[[UInt8]]] = []
        var room = 2
        #expect(outbox.drain { frames in
            guard room > 0 else { return .wouldBlock }
            room -= 1
            sent.append(frames)
            return .sent
        }.isEmpty)
        #expect(sent == [Self.message(Self.alice, 0), Self.message(Self.alice, 1)])
        #expect(outbox.count(for: Self.alice) == 3 && outbox.hasWaiting(Self.alice))

        _ = outbox.drain { frames in
            sent.append(frames)
            return .sent
        }
        #expect(sent == (0..<5).map { Self.message(Self.alice, $0) })
        #expect(outbox.isEmpty && !outbox.hasWaiting(Self.alice) && !outbox.isFull(Self.alice))
    }

    @Test func refusalsForAFullClientAreKeptOnlyWithinTheirAllowance() {
        var outbox = ClientOutbox(maxMessages: 2, maxBytes: 1 << 20, refusalAllowance: 1)
        outbox.keep(Self.message(Self.alice, 0))
        outbox.keep(Self.message(Self.alice, 1))
        let withinAllowance = outbox.keep(Self.message(Self.alice, 2), refusal: true)
        let pastAllowance = outbox.keep(Self.message(Self.alice, 3), refusal: true)
        let applied = outbox.keep(Self.message(Self.alice, 4))
        #expect(withinAllowance)
        #expect(!pastAllowance, "a refused request may lose its refusal")
        #expect(applied, "a reply to an applied request is never dropped")
        #expect(outbox.count(for: Self.alice) == 4)
    }

    @Test func aClientIsFullByBytesToo() {
        var outbox = ClientOutbox(maxMessages: 1_000, maxBytes: 100)
        outbox.keep([Self.alice, [UInt8](repeating: 0, count: 200)])
        #expect(outbox.isFull(Self.alice))
    }

    @Test func aGoneClientLosesWhatWaitsForItAndOthersAreUnaffected() {
        var outbox = ClientOutbox(maxMessages: 10, maxBytes: 1 << 20)
        outbox.keep(Self.message(Self.alice, 0))
        outbox.keep(Self.message(Self.bob, 0))
        let gone = outbox.drain { frames in frames[0] == Self.alice ? .hostUnreachable : .wouldBlock }
        #expect(gone == [Self.alice])
        #expect(!outbox.hasWaiting(Self.alice) && outbox.count(for: Self.bob) == 1)
    }

    // MARK: - Endpoint policy and configuration

    @Test(arguments: ["tcp://127.0.0.1:7130", "tcp://127.0.0.1:*", "tcp://[::1]:7130", "tcp://localhost:7130", "ipc:///tmp/x", "inproc://x"])
    func loopbackAndLocalEndpointsMayBeBound(_ endpoint: String) throws {
        _ = try EndpointPolicy.bindable(endpoint)
    }

    @Test(arguments: [
        "tcp://127.0.0.1:0;0.0.0.0:7130", "tcp://0.0.0.0:7130", "tcp://*:7130", "tcp://[::]:7130", "tcp://10.1.2.3:7130",
        "tcp://[2001:db8::1]:7130", "tcp://0:7130", "tcp://no-such-host.invalid:7130", "tcp://eth0:7130", "pgm://eth0;239.1.1.1:1",
    ])
    func anythingElseIsRefusedNamingTheEndpointAsGiven(_ endpoint: String) {
        let error = #expect(throws: EndpointError.self) { try EndpointPolicy.bindable(endpoint) }
        #expect(error?.endpoint == endpoint)
    }

    /// `0.0.0.0` and `[::]` are plain addresses to the parser; only CURVE (`allowNonLoopback`) admits
    /// them, and without it the refusal names the flags that would.
    @Test(arguments: ["tcp://0.0.0.0:7130", "tcp://[::]:7130"])
    func everyInterfaceParsesButIsBoundOnlyWithCurve(_ text: String) throws {
        let endpoint = try Endpoint(parsing: text)
        let error = #expect(throws: EndpointError.self) { try EndpointPolicy.bindable(text) }
        #expect(error?.endpoint == text)
        #expect(error?.problem.contains("reachable from other machines") == true, "\(String(describing: error))")
        #expect(error?.problem.contains("--curve-key with --authorized-workers/--authorized-clients") == true, "\(String(describing: error))")
        #expect(try EndpointPolicy.bindable(text, allowNonLoopback: true) == endpoint)
    }

    @Test func theConfigurationNamesASettingOutOfRange() {
        var configuration = CoordinatorConfiguration()
        #expect(configuration.problem == nil)
        configuration.liveness = 5_000_000_000
        #expect(configuration.problem == "liveness must be a whole number from 1 to 1000, not 5000000000")
        configuration = CoordinatorConfiguration()
        configuration.killGrace = 1e300
        #expect(configuration.problem?.hasPrefix("killGrace must be a number of seconds") == true)
        configuration = CoordinatorConfiguration()
        configuration.heartbeatInterval = .infinity
        #expect(configuration.problem?.hasPrefix("heartbeatInterval must be") == true)
    }

    @Test func privateIPCNeedsADirectoryOnlyItsOwnerCanEnter() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("opq-ipc-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        var configuration = CoordinatorConfiguration()
        let endpoints = try configuration.usePrivateIPC(in: base)
        #expect(endpoints.workers == "ipc://\(base)/workers" && configuration.clientsEndpoint == "ipc://\(base)/clients")
        let mode = try FileManager.default.attributesOfItem(atPath: base)[.posixPermissions] as? Int
        #expect(mode == 0o700)
        _ = try configuration.usePrivateIPC(in: base)  // an existing private directory is fine

        try FileManager.default.setAttributes([.posixPermissions: 0o750], ofItemAtPath: base)
        let open = #expect(throws: EndpointError.self) { try configuration.usePrivateIPC(in: base) }
        #expect(open?.problem == "other users may enter the directory (mode 750): chmod 700 it first")

        let link = base + "-link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: base)
        defer { try? FileManager.default.removeItem(atPath: link) }
        #expect(throws: EndpointError.self) { try configuration.usePrivateIPC(in: link) }
        #expect(throws: EndpointError.self) { try configuration.usePrivateIPC(in: "relative/dir") }
    }
}
