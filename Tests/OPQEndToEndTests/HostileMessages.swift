import Foundation
import OPQCore
import OPQWire

/// A seeded stream of hostile messages for a coordinator's two ROUTER sockets (`CoordinatorFuzzTests`):
/// random bytes, mutated valid messages, valid messages carrying values at every limit (ids 0, 2^63−1,
/// 2^63, 2^64−1; attempts, slots, durations, names at and past their bounds), reports for attempts the
/// sender does not hold, registrations with extreme values, watches and unwatches, reconnects, and rare
/// huge-but-legal messages. The same seed gives the same stream (``OPQCore/SplitMix64``).
///
/// Nothing it generates can reach the canary: the canary's queue and label never appear in a message
/// (see `canaryQueue`), so the canary job checks the coordinator, not the luck of the draw.
struct HostileMessages {
    /// Which socket a message goes to.
    enum Target: Equatable { case clients, workers }

    /// What a message exercises (for the failure report).
    enum Kind: String, CaseIterable {
        case randomBytes = "random bytes", mutated = "mutated valid", limits = "values at the limits"
        case foreignReports = "reports for foreign attempts", registration = "extreme registration"
        case watches = "watch/unwatch", huge = "huge but legal", reconnect = "reconnect"
    }

    /// Known crashes of issue 11 the stream can steer around (`OPQ_FUZZ_AVOID`), until they are fixed.
    enum Avoid: String, CaseIterable {
        /// Any uint64 ≥ 2^63 in a message that decodes (ids reach the core as `Int`).
        case idsAbove63 = "ids-2^63"
        /// Two live Watches on one client connection: when that client goes away — a disconnect, or
        /// just a full pipe (EAGAIN) — the coordinator's effect flush force-unwraps a dropped watcher.
        /// Avoided, each client connection has at most one Watch.
        case twoWatches = "two-watches"
        /// Megabyte progress reports (kept without bound).
        case hugeProgress = "huge-progress"
        /// Peers closing their socket and connecting again (`reconnect`). Found by this test: libzmq 4.3.4
        /// aborted the coordinator with `Assertion failed: !_io_error (src/stream_engine_base.cpp:331)`
        /// (libzmq #4841) through the clients socket's ZMTP heartbeat, now off (PeerDisconnectTests).
        case disconnects = "disconnects"
        /// Operation timeouts above `WireLimits.maxSeconds`: the core accepts any finite timeout, and the
        /// dispatch then carries one that workers refuse (issue 11: a value accepted at one edge and
        /// refused at another).
        case longTimeouts = "long-timeouts"
        /// Prune requests from hostile clients. Found by this test, all fixed (PruneTests): a Prune handled
        /// in the same turn as (a) the finish a Wait was waiting for made the coordinator answer the Wait
        /// with an OperationInfo of id 0; (b) a dispatch decided earlier in the turn made it send that
        /// dispatch with the pruned operation's emptied work; a flood of prunes starved the loop (each
        /// rewrote the journal); with prunes on, turns with thousands of events for many watches stalled the
        /// loop (WatcherLoadTests). Sent by default again.
        case prune = "prune"
    }

    /// One message: `frames` sent by peer `peer` of `target`; a `reconnect` has no frames and means
    /// "close that peer's socket and open a new one with the same identity".
    struct Message {
        let target: Target
        let peer: Int
        let kind: Kind
        let frames: [[UInt8]]

        /// `messages` as bytes, for replaying a failed batch: per message one byte target (0 clients,
        /// 1 workers), one byte peer, one byte kind index, a 4-byte frame count, then each frame as a
        /// 4-byte length and its bytes (little-endian); a reconnect has no frames.
        static func archive(_ messages: [Message]) -> Data {
            var data = Data()
            func append(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
            for message in messages {
                data.append(contentsOf: [message.target == .clients ? 0 : 1, UInt8(message.peer),
                                         UInt8(Kind.allCases.firstIndex(of: message.kind) ?? 0)])
                append(UInt32(message.frames.count))
                for frame in message.frames {
                    append(UInt32(frame.count))
                    data.append(contentsOf: frame)
                }
            }
            return data
        }

        /// A one-line description for failure reports: kind, target, sizes, the first bytes in hex.
        var summary: String {
            let sizes = frames.map { String($0.count) }.joined(separator: "+")
            let body = frames.count > 1 ? frames[1] : frames.first ?? []
            let hex = body.prefix(48).map { String(format: "%02x", $0) }.joined()
            return "\(kind.rawValue) → \(target) peer \(peer), frames \(sizes): \(hex)"
        }
    }

    /// The queue and label only the canary uses.
    static let canaryQueue = "fuzz-canary"
    /// Peers per socket.
    let peers: Int
    let avoid: Set<Avoid>
    private var random: SplitMix64
    /// Client peers whose connection has a Watch (with `two-watches` avoided).
    private var watching: Set<Int> = []

    init(seed: UInt64, peers: Int, avoid: Set<Avoid>) {
        random = SplitMix64(seed: seed)
        self.peers = peers
        self.avoid = avoid
    }

    /// The routing id of worker peer `peer`.
    static func workerName(_ peer: Int) -> String { "fuzz-w\(peer)" }

    mutating func next() -> Message {
        let roll = int(10_000)
        if roll < 2 { return huge() }
        if roll < 7, !avoid.contains(.disconnects) {
            let (target, peer) = (bool() ? Target.clients : .workers, int(peers))
            if target == .clients { watching.remove(peer) }
            return Message(target: target, peer: peer, kind: .reconnect, frames: [])
        }
        if roll < 2_000 { return randomBytes() }
        if roll < 5_500 { return mutated() }
        if roll < 6_300 {
            let peer = int(peers)
            return Message(target: .clients, peer: peer, kind: .watches, frames: encode(watchRequest(peer: peer)))
        }
        if roll < 7_000 { return registration() }
        if roll < 8_000 { return foreignReports() }
        return limits()
    }

    // MARK: - Kinds

    private mutating func randomBytes() -> Message {
        var frames: [[UInt8]] = bool() ? [Frames.signature] : []
        for _ in 0..<1 + int(3) { frames.append(bytes(int(8) == 0 ? int(4_096) : int(64))) }
        return Message(target: bool() ? .clients : .workers, peer: int(peers), kind: .randomBytes, frames: frames)
    }

    private mutating func limits() -> Message {
        if bool() { return Message(target: .clients, peer: int(peers), kind: .limits, frames: encode(clientRequest())) }
        let peer = int(peers)
        return Message(target: .workers, peer: peer, kind: .limits, frames: encode(workerMessage(peer: peer)))
    }

    private mutating func registration() -> Message {
        let peer = int(peers)
        return Message(target: .workers, peer: peer, kind: .registration, frames: encode(register(peer: peer)))
    }

    private mutating func foreignReports() -> Message {
        let peer = int(peers)
        var raw: [[UInt8]] = []
        let items = (0..<1 + int(4)).map { _ in report(raw: &raw) }
        var message = Opq_V1_WorkerMessage.reports(items)
        message.reports.sequence = pick([0, 1, 2, UInt64(int(1_000))])
        return Message(target: .workers, peer: peer, kind: .foreignReports, frames: encode(message, raw: raw))
    }

    /// A valid message, then 1–4 byte-level mutations. Mutants that would hit an avoided crash (a varint
    /// ≥ 2^63 anywhere, a second Watch on a connection, a Prune, a timeout too long) are drawn again.
    private mutating func mutated() -> Message {
        while true {
            let toClients = bool()
            let peer = int(peers)
            var frames = toClients ? encode(clientRequest()) : encode(workerMessage(peer: peer))
            for _ in 0..<1 + int(4) { mutate(&frames) }
            if avoid.contains(.idsAbove63), frames.count > 1, ProtobufScan.hasVarint(atLeast: 1 << 63, in: frames[1]) { continue }
            if toClients, frames.count > 1, let request = try? Opq_V1_ClientRequest(serializedBytes: frames[1]) {
                if case .prune = request.body, avoid.contains(.prune) { continue }
                if case .submit(let submit) = request.body, avoid.contains(.longTimeouts),
                   submit.operations.contains(where: { $0.hasTimeoutSeconds && $0.timeoutSeconds.isFinite && $0.timeoutSeconds > WireLimits.maxSeconds }) {
                    continue
                }
                if case .watch = request.body, avoid.contains(.twoWatches) {
                    if watching.contains(peer) { continue }
                    watching.insert(peer)
                }
            }
            return Message(target: toClients ? .clients : .workers, peer: peer, kind: .mutated, frames: frames)
        }
    }

    private mutating func huge() -> Message {
        let peer = int(peers)
        switch int(avoid.contains(.hugeProgress) ? 3 : 4) {
        case 0:  // a submission of thousands of operations
            let ops = (0..<2_000 + int(3_000)).map { k in
                OperationSpec(name: "bulk-\(k)", queue: pick(Self.queues), work: .command(Command(["true"])))
            }
            let request = Opq_V1_ClientRequest.request(next64()) { $0.submit = Opq_V1_Submit(Submission(ops)) }
            return Message(target: .clients, peer: peer, kind: .huge, frames: encode(request))
        case 1:  // a finish report with megabytes of output, for an attempt the sender does not hold
            var raw: [[UInt8]] = []
            var finished = Opq_V1_Finished(OperationID(id()), attempt: 1, report: AttemptReport(.succeeded), duration: 1)
            finished.attachOutput(stdout: bytes(1 << 20), stderr: bytes(1 << 20), to: &raw)
            return Message(target: .workers, peer: peer, kind: .huge, frames: encode(Opq_V1_WorkerMessage.reports([.finished(finished)]), raw: raw))
        case 2:  // a registration at the list bounds
            var message = Opq_V1_WorkerMessage()
            message.register = register(peer: peer).register
            message.register.labels = Dictionary(uniqueKeysWithValues: (0..<10_000).map { ("l\($0)", String(repeating: "v", count: 64)) })
            message.register.handlers = (0..<10_000).map { "h\($0)" }
            return Message(target: .workers, peer: peer, kind: .huge, frames: encode(message))
        default:  // a megabyte progress report
            let progress = Opq_V1_Progress.with {
                $0.operation = id()
                $0.attempt = 1
                $0.message = String(repeating: "p", count: 1 << 20)
            }
            return Message(target: .workers, peer: peer, kind: .huge, frames: encode(Opq_V1_WorkerMessage.reports([.progress(progress)])))
        }
    }

    // MARK: - Valid messages with values at the limits

    static let queues = ["default", "", "q1", "q2", "fuzz"]

    mutating func clientRequest() -> Opq_V1_ClientRequest {
        .request(pick([0, 1, next64(), UInt64.max >> 1, UInt64(int(100))])) { request in
            switch int(16) {
            case 0, 1, 2: request.submit = submit()
            case 3:
                request.cancel = .with {
                    switch int(4) {
                    case 0: $0.operation = id()
                    case 1: $0.job = id()
                    case 2: $0.queue = name()
                    default: $0.all = Opq_V1_All()
                    }
                }
            case 4:
                request.setQueue = .with {
                    $0.queue = pick(Self.queues)
                    if bool() { $0.maxConcurrent = pick([-2, -1, 0, 1, 2, Int32.max, Int32.min]) }
                    if bool() { $0.suspended = int(4) == 0 }
                }
            case 5: request.setPriority = .with { $0.operation = id(); $0.priority = pick([-9, -8, -4, 0, 4, 8, 9, Int32.max, Int32.min]) }
            case 6: request.addDependency = .with { $0.operation = id(); $0.dependency = id() }
            case 7: request.removeDependency = .with { $0.operation = id(); $0.dependency = id() }
            case 8: request.listJobs = .with { $0.after = id(); $0.limit = pick([0, 1, UInt32.max]); $0.unfinishedOnly = bool() }
            case 9: request.getJob = .with { $0.job = id(); $0.includeOperations = bool() }
            case 10:
                request.listOperations = .with {
                    $0.queue = pick(Self.queues)
                    $0.after = id()
                    $0.job = pick([0, id()])
                    $0.limit = pick([0, 1, UInt32.max])
                    $0.states = (0..<int(3)).map { _ in Opq_V1_OperationState(rawValue: 1 + int(5)) ?? .ready }
                }
            case 11: request.getOperation = .with { $0.operation = id(); $0.includeOutput = bool() }
            case 12:
                request.wait = .with {
                    switch int(3) {
                    case 0: $0.operation = id()
                    case 1: $0.job = id()
                    default: $0.queue = name()
                    }
                    // A wait without a timeout stays until its target finishes: most carry one.
                    if int(8) != 0 { $0.timeoutSeconds = pick([0, 0.001, 0.5, seconds()]) }
                }
            case 13:
                if avoid.contains(.prune) {
                    request.listJobs = Opq_V1_ListJobs()
                } else {
                    request.prune = .with { if bool() { $0.olderThanSeconds = seconds() } }
                }
            case 14: request.listQueues = Opq_V1_ListQueues()
            default: request.listWorkers = Opq_V1_ListWorkers()
            }
        }
    }

    mutating func watchRequest(peer: Int) -> Opq_V1_ClientRequest {
        let unwatch = int(3) == 0 || (avoid.contains(.twoWatches) && watching.contains(peer))
        if !unwatch { watching.insert(peer) }
        return .request(pick([0, 1, 2, UInt64(int(16)), next64()])) { request in
            if unwatch {
                request.unwatch = .with { $0.watch = pick([0, 1, 2, UInt64(int(16)), next64()]) }
                return
            }
            request.watch = .with {
                switch int(3) {
                case 0: $0.job = id()
                case 1: $0.queue = pick(["default", "q1", "fuzz"])
                default: $0.all = Opq_V1_All()
                }
                if bool() { $0.resumeAfter = id() }
            }
        }
    }

    private mutating func submit() -> Opq_V1_Submit {
        let count = 1 + int(int(10) == 0 ? 50 : 4)
        var submit = Opq_V1_Submit()
        submit.operations = (0..<count).map { k in
            Opq_V1_OperationSpec.with { spec in
                spec.name = int(4) == 0 ? "" : pick(["a", "b", "op-\(k)", "dup", name()])
                spec.queue = pick(Self.queues)
                switch int(5) {
                case 0: spec.work = Opq_V1_Work(.command(Command(["true"])))
                case 1: spec.work = Opq_V1_Work(.command(Command(pick([[], [""], ["/nonexistent/fuzz"], ["false"]]))))
                case 2: spec.work = Opq_V1_Work(.handler(name: pick(["noop", "", "missing"]), payload: bytes(int(32))))
                case 3: spec.work = Opq_V1_Work(.commands([Command(["true"]), Command(["false"])]))
                default: break
                }
                spec.dependencies = (0..<int(3)).map { _ in
                    bool() ? .with { $0.name = pick(["a", "b", "op-0", "missing", ""]) } : .with { $0.id = id() }
                }
                spec.priority = pick([0, -8, 8, Int32.max, Int32.min])
                spec.retries = pick([0, 1, WireLimits.maxRetries, WireLimits.maxRetries &+ 1, UInt32.max])
                if bool() {
                    let timeout = seconds()
                    let tooLong = timeout.isFinite && timeout > WireLimits.maxSeconds && avoid.contains(.longTimeouts)
                    spec.timeoutSeconds = tooLong ? WireLimits.maxSeconds : timeout
                }
                if int(4) == 0 { spec.labels = [pick(["gpu", "", "host"]): pick(["1", ""])] }
                spec.barrier = int(8) == 0
                spec.requires = bool() ? .success : .any
            }
        }
        if int(4) == 0 {
            submit.queueSettings = [.with {
                $0.queue = pick(Self.queues)
                $0.maxConcurrent = pick([-2, -1, 0, 1, Int32.max, Int32.min])
                $0.suspended = int(4) == 0
            }]
        }
        if bool() { submit.idempotencyKey = pick(["k1", "k2", name()]) }
        return submit
    }

    mutating func workerMessage(peer: Int) -> Opq_V1_WorkerMessage {
        switch int(6) {
        case 0: return register(peer: peer)
        case 1: return .heartbeat
        case 2:
            return .with {
                $0.goodbye = .with {
                    $0.reason = name()
                    $0.handedBack = (0..<int(3)).map { _ in attemptRef() }
                }
            }
        default:
            var raw: [[UInt8]] = []
            let items = (0..<1 + int(3)).map { _ in report(raw: &raw) }
            return .reports(items)
        }
    }

    /// A registration under the peer's own name (mostly) with extreme slots, filters, labels and held
    /// attempts. Never the canary's queue or label.
    private mutating func register(peer: Int) -> Opq_V1_WorkerMessage {
        .with {
            $0.register = .with { register in
                register.protocolVersion = int(16) == 0 ? pick([0, 2, UInt32.max]) : WireLimits.protocolVersion
                register.workerName = int(16) == 0 ? pick(["", "other", Self.workerName(peer + 1)]) : Self.workerName(peer)
                register.slots = pick([0, 0, 1, 2, 8, -1, WireLimits.maxSlots, WireLimits.maxSlots &+ 1, Int32.max, Int32.min])
                if int(4) != 0 { register.queueFilter = .with { $0.queues = (0..<int(3)).map { _ in pick(Self.queues) } } }
                if bool() { register.labels = [pick(["gpu", "host", ""]): pick(["1", "a", ""])] }
                register.held = (0..<int(4)).map { _ in attemptRef() }
                register.handlers = (0..<int(3)).map { _ in pick(["noop", "", name()]) }
                register.host = name()
                register.pid = pick([0, 1, UInt32.max])
            }
        }
    }

    private mutating func report(raw: inout [[UInt8]]) -> Opq_V1_Report {
        switch int(3) {
        case 0: return .started(OperationID(id()), attempt: Int(attempt()))
        case 1:
            var finished = Opq_V1_Finished()
            finished.operation = id()
            finished.attempt = attempt()
            finished.status = Opq_V1_AttemptStatus(rawValue: int(5)) ?? .failed
            finished.reason = Opq_V1_FinishReason(rawValue: int(10)) ?? .none
            if bool() { finished.exitCode = pick([0, 1, -1, Int32.max, Int32.min]) }
            if int(4) == 0 { finished.signal = pick([0, 9, 15, Int32.max]) }
            finished.durationSeconds = seconds()
            if bool() { finished.attachOutput(stdout: bytes(int(256)), stdoutTotal: pick([nil, 0, Int.max]), stderr: bytes(int(64)), to: &raw) }
            if int(8) == 0 { finished.stdout.frame = pick([0, 1, 5, UInt32.max]) }
            finished.errorMessage = name()
            return .finished(finished)
        default:
            return .progress(.with {
                $0.operation = id()
                $0.attempt = attempt()
                if bool() { $0.fraction = pick([0, 0.5, 1, -0.1, 1.1, .nan, .infinity]) }
                $0.message = name()
            })
        }
    }

    private mutating func attemptRef() -> Opq_V1_AttemptRef { .with { $0.operation = id(); $0.attempt = attempt() } }

    // MARK: - Values

    /// An id: mostly small (so it names something that exists), else at an integer limit.
    private mutating func id() -> UInt64 {
        var choices: [UInt64] = [0, 1, 2, 3, UInt64(1 + int(64)), UInt64(1 + int(64)), UInt64(Int64.max), UInt64(UInt32.max) + 1]
        if !avoid.contains(.idsAbove63) { choices += [1 << 63, UInt64.max, next64() | 1 << 63] }
        return pick(choices)
    }

    private mutating func attempt() -> UInt32 {
        pick([0, 1, 1, 2, WireLimits.maxAttempt, WireLimits.maxAttempt &+ 1, UInt32.max])
    }

    private mutating func seconds() -> Double {
        pick([0, -0.0, -1, 0.001, 1, 30, 1e300, .infinity, -.infinity, .nan, WireLimits.maxSeconds, WireLimits.maxSeconds * 2,
              .leastNonzeroMagnitude, .greatestFiniteMagnitude])
    }

    private mutating func name() -> String {
        switch int(8) {
        case 0: return ""
        case 1: return String(repeating: "n", count: WireLimits.maxNameBytes)
        case 2: return String(repeating: "n", count: WireLimits.maxNameBytes + 1)
        case 3: return "tab\tnew\nline\0nul"
        case 4: return "ünïcødé-🙂"
        default: return "n\(int(32))"
        }
    }

    // MARK: - Mutation

    private mutating func mutate(_ frames: inout [[UInt8]]) {
        let k = frames.count > 1 && int(8) != 0 ? 1 : int(frames.count)
        var frame = frames[k]
        switch int(9) {
        case 0, 1:  // flip bits
            if !frame.isEmpty { for _ in 0..<1 + int(4) { frame[int(frame.count)] ^= UInt8(1) << UInt8(int(8)) } }
        case 2:  // an interesting byte
            if !frame.isEmpty { frame[int(frame.count)] = pick([0x00, 0xFF, 0x7F, 0x80, 0x01, 0x0A, 0x12]) }
        case 3:  // insert bytes
            frame.insert(contentsOf: bytes(1 + int(8)), at: int(frame.count + 1))
        case 4:  // delete a range
            if !frame.isEmpty {
                let start = int(frame.count)
                frame.removeSubrange(start..<min(frame.count, start + 1 + int(8)))
            }
        case 5:  // truncate
            frame = Array(frame.prefix(int(frame.count + 1)))
        case 6:  // duplicate a slice at the end (repeated fields, a second copy of a field)
            if !frame.isEmpty {
                let start = int(frame.count)
                frame += frame[start..<min(frame.count, start + 1 + int(32))]
            }
        case 7:  // another frame: extra raw frames, a lost signature, a second message
            if bool() { frames.append(bytes(int(64))) } else if frames.count > 1 { frames.removeFirst() }
            return
        default:  // an overlong varint, a bogus length prefix
            frame.insert(contentsOf: pick([[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], [0x0A, 0xFF, 0xFF, 0xFF, 0x0F],
                                           [0x12, 0x7F], [0xFA, 0xFF, 0xFF, 0xFF, 0x0F]]), at: int(frame.count + 1))
        }
        frames[k] = frame
    }

    // MARK: - Randomness

    private mutating func next64() -> UInt64 { random.next() }
    private mutating func int(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(random.next() % UInt64(bound)) }
    private mutating func bool() -> Bool { random.next() & 1 == 0 }
    private mutating func pick<T>(_ choices: [T]) -> T { choices[int(choices.count)] }
    private mutating func bytes(_ count: Int) -> [UInt8] {
        var result = [UInt8]()
        result.reserveCapacity(count)
        while result.count < count {
            var word = random.next()
            for _ in 0..<min(8, count - result.count) {
                result.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return result
    }

    private func encode<M: WireEnvelope>(_ message: M, raw: [[UInt8]] = []) -> [[UInt8]] {
        // Built without validation (Frames.encode does not validate): invalid values are the point.
        let body: [UInt8] = (try? message.serializedBytes()) ?? []
        return [Frames.signature, body] + raw
    }
}

/// A scan of protobuf wire format that finds varints at or above a bound anywhere in a message,
/// nested messages included (a length-delimited field that parses as a message is searched too).
enum ProtobufScan {
    static func hasVarint(atLeast bound: UInt64, in bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { found(bound, in: $0[...], depth: 0) ?? false }
    }

    /// nil when `bytes` is not well-formed wire format (then it is not searched as a message).
    private static func found(_ bound: UInt64, in bytes: Slice<UnsafeBufferPointer<UInt8>>, depth: Int) -> Bool? {
        var index = bytes.startIndex
        func varint() -> UInt64? {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 70, by: 7) {
                guard index < bytes.endIndex else { return nil }
                let byte = bytes[index]
                index += 1
                if shift < 64 { value |= UInt64(byte & 0x7F) << UInt64(shift) }
                if byte & 0x80 == 0 { return value }
            }
            return nil
        }
        var hit = false
        while index < bytes.endIndex {
            guard let key = varint() else { return nil }
            switch key & 7 {
            case 0:
                guard let value = varint() else { return nil }
                if value >= bound { hit = true }
            case 1: index += 8
            case 5: index += 4
            case 2:
                guard let length = varint(), length <= UInt64(bytes.endIndex - index) else { return nil }
                let end = index + Int(length)
                if depth < 32, found(bound, in: bytes[index..<end], depth: depth + 1) == true { hit = true }
                index = end
            default: return nil
            }
            if index > bytes.endIndex { return nil }
        }
        return hit
    }
}
