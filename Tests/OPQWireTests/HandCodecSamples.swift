import Foundation
import OPQCore
import OPQWire
import SwiftProtobuf

/// Seeded random worker ↔ coordinator messages for the hand-written codec's tests: mostly plausible
/// values, and a quarter of the time extremes (0, UInt64.max, negative int32, -0.0, NaN, unicode,
/// empty and long strings, unknown enum values, a missing oneof).
struct RandomMessages {
    var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
    mutating func count(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

    mutating func uint64() -> UInt64 {
        chance(0.75) ? UInt64.random(in: 1...5_000, using: &random)
            : [0, 1, 127, 128, 16_383, 16_384, UInt64(UInt32.max), UInt64.max, random.next()].randomElement(using: &random)!
    }

    mutating func uint32() -> UInt32 {
        chance(0.75) ? UInt32.random(in: 1...3, using: &random) : [0, 127, 128, UInt32.max, UInt32(truncatingIfNeeded: random.next())].randomElement(using: &random)!
    }

    mutating func int32() -> Int32 {
        chance(0.75) ? Int32.random(in: 0...2, using: &random) : [-1, Int32.min, Int32.max, 255, 9].randomElement(using: &random)!
    }

    mutating func seconds() -> Double {
        chance(0.75) ? Double.random(in: 0...100, using: &random)
            : [0, -0.0, .nan, .infinity, -1, 1e-300, .greatestFiniteMagnitude, 1].randomElement(using: &random)!
    }

    mutating func string() -> String {
        if chance(0.6) { return ["", "build", "compile", "x", "/usr/bin/cc", "CC", "clang"].randomElement(using: &random)! }
        return ["é", "日本語のテキスト", "🙂 emoji 🧪", "\u{0}nul", String(repeating: "x", count: 127), String(repeating: "y", count: 128),
                String(repeating: "ü", count: 300), String(repeating: "z", count: 20_000),
                String((0..<count(0...40)).map { _ in Character(Unicode.Scalar(UInt8.random(in: 32...126, using: &random))) })]
            .randomElement(using: &random)!
    }

    mutating func data() -> Data {
        chance(0.5) ? Data() : Data((0..<count(0...300)).map { _ in UInt8.random(in: 0...255, using: &random) })
    }

    /// A value of `E`: a defined one, or (1 in 8) one this version does not define.
    mutating func enumeration<E: SwiftProtobuf.Enum & CaseIterable>(_ type: E.Type) -> E where E.RawValue == Int {
        if chance(0.875) { return E.allCases.randomElement(using: &random)! }
        return E(rawValue: [-1, 99, 1_000, Int(Int32.min), Int(Int32.max)].randomElement(using: &random)!)!
    }

    mutating func tail() -> Opq_V1_OutputTail { .with { $0.frame = chance(0.7) ? UInt32(count(0...2)) : uint32(); $0.totalBytes = uint64() } }

    mutating func report() -> Opq_V1_Report {
        var report = Opq_V1_Report()
        switch count(0...16) {
        case 0: break  // a missing oneof
        case 1...5: report.started = .with { $0.operation = uint64(); $0.attempt = uint32() }
        case 6...11:
            report.finished = .with {
                $0.operation = uint64(); $0.attempt = uint32()
                $0.status = enumeration(Opq_V1_AttemptStatus.self); $0.reason = enumeration(Opq_V1_FinishReason.self)
                if chance(0.5) { $0.exitCode = int32() }
                if chance(0.2) { $0.signal = int32() }
                $0.durationSeconds = seconds()
                if chance(0.5) { $0.stdout = tail() }
                if chance(0.3) { $0.stderr = tail() }
                if chance(0.2) { $0.errorMessage = string() }
                if chance(0.2) { $0.result = tail() }
            }
        case 12...13:
            report.progress = .with {
                $0.operation = uint64(); $0.attempt = uint32()
                if chance(0.7) { $0.fraction = chance(0.8) ? Double.random(in: 0...1, using: &random) : seconds() }
                $0.message = string()
            }
        default:
            report.output = .with {
                $0.operation = uint64(); $0.attempt = uint32(); $0.stream = enumeration(Opq_V1_OutputStream.self)
                $0.offset = uint64(); $0.frame = chance(0.8) ? UInt32(count(1...2)) : uint32()
            }
        }
        return report
    }

    mutating func workerMessage() -> Opq_V1_WorkerMessage {
        var message = Opq_V1_WorkerMessage()
        switch count(0...9) {
        case 0: break
        case 1: message.heartbeat = Opq_V1_Heartbeat()
        default:
            message.reports = .with {
                $0.items = (0..<(chance(0.05) ? 0 : count(1...4))).map { _ in report() }
                if chance(0.8) { $0.sequence = uint64() }
            }
        }
        if chance(0.5) { message.leaseRequest = uint64() }
        return message
    }

    mutating func command() -> Opq_V1_Command {
        .with {
            $0.argv = (0..<count(chance(0.9) ? 1...4 : 0...1)).map { _ in string() }
            for _ in 0..<count(0...3) { $0.environment[string()] = string() }
            if chance(0.4) { $0.workingDirectory = string() }
            if chance(0.2) { $0.inputs = (0..<count(0...2)).map { _ in string() } }
            if chance(0.2) { $0.outputs = (0..<count(0...2)).map { _ in string() } }
        }
    }

    mutating func work() -> Opq_V1_Work {
        var work = Opq_V1_Work()
        switch count(0...9) {
        case 0: break  // no kind
        case 1...5: work.command = command()
        case 6: work.commands = .with { $0.commands = (0..<count(0...3)).map { _ in command() } }
        case 7...8: work.handler = .with { $0.name = string(); $0.payload = data() }
        default: work.handlers = .with { $0.calls = (0..<count(0...3)).map { _ in .with { $0.name = string(); $0.payload = data() } } }
        }
        return work
    }

    mutating func dispatch() -> Opq_V1_Dispatch {
        .with {
            $0.operation = uint64(); $0.attempt = uint32(); $0.name = string(); $0.job = uint64(); $0.queue = string()
            if chance(0.95) { $0.work = work() }
            $0.qos = enumeration(Opq_V1_QualityOfService.self)
            if chance(0.3) { $0.timeoutSeconds = seconds() }
            $0.killGraceSeconds = seconds()
            if chance(0.2) {
                $0.dependencies = (0..<count(1...3)).map { _ in
                    .with {
                        $0.operation = uint64(); $0.name = string(); $0.outcome = enumeration(Opq_V1_Outcome.self)
                        $0.result = data(); $0.resultOmitted = chance(0.2)
                    }
                }
            }
        }
    }

    mutating func coordinatorToWorker() -> Opq_V1_CoordinatorToWorker {
        var message = Opq_V1_CoordinatorToWorker()
        switch count(0...9) {
        case 0: break
        case 1: message.heartbeat = Opq_V1_Heartbeat()
        default:
            message.orders = .with {
                $0.items = (0..<(chance(0.05) ? 0 : count(1...3))).map { _ in
                    var order = Opq_V1_Order()
                    switch count(0...12) {
                    case 0: break  // a missing oneof
                    case 1...3: order.kill = .with {
                        $0.operation = uint64(); $0.attempt = uint32(); $0.reason = enumeration(Opq_V1_KillReason.self); $0.graceSeconds = seconds()
                    }
                    default: order.dispatch = dispatch()
                    }
                    return order
                }
            }
        }
        if chance(0.5) { message.reportsDurable = uint64() }
        if chance(0.5) { message.leaseEcho = uint64() }
        return message
    }
}

/// Changes to valid protobuf bytes that a peer may send (the fields shuffled, an unknown field, a field
/// repeated, a varint written long) or that break them (a cut, a flipped byte), at any nesting depth.
struct WireMutations {
    /// One field: its key's bytes and the rest (the value, with its length when length-delimited).
    struct Record {
        var number: UInt64
        var wireType: UInt64
        var key: [UInt8]
        var value: [UInt8]
        /// The body of a length-delimited field (which may be a message).
        var body: [UInt8]? { wireType == 2 ? Array(value.dropFirst(Self.varintLength(value))) : nil }

        static func varintLength(_ bytes: [UInt8]) -> Int { (bytes.firstIndex { $0 & 0x80 == 0 } ?? bytes.count - 1) + 1 }
    }

    /// The fields of `bytes`, or nil when they do not parse as a message.
    static func records(_ bytes: [UInt8]) -> [Record]? {
        var records: [Record] = []
        var index = 0
        func varint() -> (UInt64, Range<Int>)? {
            let start = index
            var value: UInt64 = 0, shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return (value, start..<index) }
                shift += 7
            }
            return nil
        }
        while index < bytes.count {
            guard let (key, keyRange) = varint(), key >> 3 != 0 else { return nil }
            let valueStart = index
            switch key & 7 {
            case 0: guard varint() != nil else { return nil }
            case 1: index += 8
            case 5: index += 4
            case 2:
                guard let (length, _) = varint(), length <= UInt64(bytes.count - index) else { return nil }
                index += Int(length)
            default: return nil
            }
            guard index <= bytes.count else { return nil }
            records.append(Record(number: key >> 3, wireType: key & 7, key: Array(bytes[keyRange]), value: Array(bytes[valueStart..<index])))
        }
        return records
    }

    static func varint(_ value: UInt64, padding: Int = 0) -> [UInt8] {
        var bytes: [UInt8] = []
        LEB128.append(value, to: &bytes)
        for _ in 0..<min(padding, 10 - bytes.count) {
            bytes[bytes.count - 1] |= 0x80
            bytes.append(0)
        }
        return bytes
    }

    static func bytes(_ records: [Record]) -> [UInt8] { records.flatMap { $0.key + $0.value } }

    /// `bytes` changed once, somewhere: at this level or (half the time) inside a length-delimited field.
    static func mutate(_ bytes: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        guard var records = records(bytes), !records.isEmpty else { return byteLevel(bytes, &random) }
        let nested = records.indices.filter { records[$0].wireType == 2 }
        if let k = nested.randomElement(using: &random), Bool.random(using: &random) {
            let body = mutate(records[k].body!, &random)
            records[k].value = varint(UInt64(body.count)) + body
            return Self.bytes(records)
        }
        switch Int.random(in: 0...6, using: &random) {
        case 0: records.shuffle(using: &random)
        case 1:  // an unknown field, of any wire type
            let number = [15, 99, 1_000, 536_870_911].randomElement(using: &random)! as UInt64
            let unknown: [(UInt64, [UInt8])] = [(0, [0x96, 0x01]), (1, [UInt8](repeating: 7, count: 8)), (2, [3, 1, 2, 3]), (5, [1, 2, 3, 4])]
            let (wireType, value) = unknown.randomElement(using: &random)!
            records.insert(Record(number: number, wireType: wireType, key: varint(number << 3 | wireType), value: value),
                           at: Int.random(in: 0...records.count, using: &random))
        case 2:  // a field repeated, a message field (half the time) with other contents, which protobuf merges
            var copy = records.randomElement(using: &random)!
            if let body = copy.body, Bool.random(using: &random) {
                let changed = mutate(body, &random)
                copy.value = varint(UInt64(changed.count)) + changed
            }
            records.insert(copy, at: Int.random(in: 0...records.count, using: &random))
        case 3:  // a key written long
            let k = Int.random(in: records.indices, using: &random)
            records[k].key = varint(records[k].number << 3 | records[k].wireType, padding: Int.random(in: 1...6, using: &random))
        case 4:  // a length written long
            guard let k = nested.randomElement(using: &random), let body = records[k].body else { break }
            records[k].value = varint(UInt64(body.count), padding: Int.random(in: 1...9, using: &random)) + body
        case 5: records.remove(at: Int.random(in: records.indices, using: &random))
        default: return byteLevel(bytes, &random)
        }
        return Self.bytes(records)
    }

    /// A cut, a flipped byte or an inserted byte.
    static func byteLevel(_ bytes: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = bytes
        switch Int.random(in: 0...2, using: &random) {
        case 0: bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
        case 1: if !bytes.isEmpty { bytes[Int.random(in: bytes.indices, using: &random)] ^= UInt8.random(in: 1...255, using: &random) }
        default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...bytes.count, using: &random))
        }
        return bytes
    }
}
