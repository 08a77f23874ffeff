import Foundation
import OPQCore
import OPQWire
import SwiftProtobuf

/// `opq-bench wire`: what one hot-path message costs to encode, frame, decode and validate, beside the
/// same message as JSON (what Celery and Dask put on their wires), measured in one run.
///
/// The opq column is the whole path a message takes between two processes (`Frames.encode` then
/// `Frames.decode`, which validates); the JSON column is protobuf's own JSON mapping of the same message,
/// encoded and decoded, without validation — so the ratio favours JSON slightly.
enum WireBenchmark {
    static let usage = """
        usage: opq-bench wire [--count N] [--smoke] [--only CASE]

          --count N   messages per measurement (default 50,000; --smoke: 500)
          --smoke     a tiny run that checks the benchmark works (CI)
          --only CASE run one measurement of the codec table N times and print nothing else, for
                      instruction counts: CASE is reports|orders, then -encode|-decode, then -old|-new
                      (old = SwiftProtobuf, new = the hand-written codec). Per message:
                      (instructions at N2 − at N1) / (N2 − N1), each counted by
                      valgrind --tool=callgrind on a copy stripped with `strip --strip-debug`
                      (valgrind 3.19 cannot read the release build's DWARF 5).

        Build with -c release for figures worth quoting: a debug build is several times slower.
        """

    /// One measured message: a name, how to run it through opq's framing, and its JSON twin.
    struct Case {
        let name: String
        let frameBytes: Int
        let jsonBytes: Int
        let opq: () throws -> Void
        let json: () throws -> Void
    }

    static func run(_ arguments: [String]) -> Int32 {
        var reader = ArgumentReader(arguments, command: "opq-bench wire", usage: usage)
        var count = 50_000
        var smoke = false
        var only: String?
        while let argument = reader.next() {
            switch argument {
            case "--count": count = reader.positive(for: argument)
            case "--smoke": smoke = true
            case "--only": only = reader.value(for: argument)
            default: reader.unknown(argument)
            }
        }
        if smoke && !reader.explicit.contains("--count") { count = 500 }
        do {
            let codecCases = try makeCodecCases()
            if let only {
                guard let run = codecCases.flatMap(\.runs).first(where: { $0.name == only }) else {
                    throw ClusterBenchError("--only \(only): no such case (\(codecCases.flatMap(\.runs).map(\.name).joined(separator: ", ")))")
                }
                for _ in 0..<count { try run.body() }
                return 0
            }
            var codec = TextTable([.init("message", right: false), .init("direction", right: false), .init("SwiftProtobuf µs"),
                                   .init("hand µs"), .init("SwiftProtobuf / hand")])
            for item in codecCases {
                for (direction, old, new) in [("encode", item.runs[0], item.runs[1]), ("decode + validate", item.runs[2], item.runs[3])] {
                    let before = try microseconds(count, old.body)
                    let after = try microseconds(count, new.body)
                    codec.append([item.name, direction, Format.fixed(before, 2), Format.fixed(after, 2), Format.fixed(before / after, 1) + "×"])
                }
            }
            print("hand-written codec vs SwiftProtobuf (the same bytes and values), \(Format.grouped(count)) each:")
            print(codec.render())
            print("")
            let cases = try makeCases()
            var table = TextTable([.init("message", right: false), .init("frame B"), .init("opq µs"), .init("JSON B"),
                                   .init("JSON µs"), .init("JSON / opq")])
            for item in cases {
                let batch = item.name.hasPrefix("64 ") ? max(1, count / 64) : count
                let opq = try microseconds(batch, item.opq)
                let json = try microseconds(batch, item.json)
                table.append([item.name, Format.grouped(item.frameBytes), Format.fixed(opq, 2),
                              Format.grouped(item.jsonBytes), Format.fixed(json, 2), Format.fixed(json / opq, 1) + "×"])
            }
            print("wire cost per message (encode + decode; opq also frames and validates), \(Format.grouped(count)) each:")
            print(table.render())
            return 0
        } catch {
            var standardError = StandardError()
            print("opq-bench wire: \(error)", to: &standardError)
            return 1
        }
    }

    /// Mean microseconds of `body` over `count` runs, after a warm-up of a tenth of them.
    static func microseconds(_ count: Int, _ body: () throws -> Void) throws -> Double {
        for _ in 0..<max(1, count / 10) { try body() }
        let start = Clock.nanoseconds()
        for _ in 0..<count { try body() }
        return Double(Clock.nanoseconds() - start) / Double(count) / 1_000
    }

    /// A command dispatch like the ones `opq map` sends.
    static let dispatch = Opq_V1_Dispatch.with {
        $0.operation = 42
        $0.attempt = 1
        $0.name = "compile"
        $0.job = 7
        $0.queue = "build"
        $0.work = Opq_V1_Work(.command(Command(["/usr/bin/cc", "-c", "main.c"], environment: ["CC": "clang"],
                                               workingDirectory: "/src")))
        $0.qos = .userInitiated
        $0.timeoutSeconds = 30
        $0.killGraceSeconds = 10
    }

    static func makeCases() throws -> [Case] {
        var finished = Opq_V1_Finished(OperationID(42), attempt: 1, report: .exited(0), duration: 1.25)
        var raw: [[UInt8]] = []
        finished.attachOutput(stdout: Array("all good\n".utf8), stderr: [], to: &raw)
        let batch = (1...64).map { k in Opq_V1_Order.dispatch(.with { $0 = dispatch; $0.operation = UInt64(k) }) }
        return try [
            measured("Dispatch (1 command)", Opq_V1_CoordinatorToWorker.orders([.dispatch(dispatch)])),
            measured("Finished (stdout tail frame)", Opq_V1_WorkerMessage.reports([.finished(finished)]), raw: raw),
            measured("Started", Opq_V1_WorkerMessage.reports([.started(OperationID(42), attempt: 1)])),
            measured("64 Dispatches in one message", Opq_V1_CoordinatorToWorker.orders(batch)),
        ]
    }

    /// One message of the hand-written codec's table: its encode and decode, old (SwiftProtobuf) and new.
    struct CodecCase {
        struct Run {
            let name: String
            let body: () throws -> Void
        }

        let name: String
        /// encode-old, encode-new, decode-old, decode-new.
        let runs: [Run]
    }

    /// The two messages sent per command: a worker's Started + Finished (with a stdout tail) and the
    /// coordinator's dispatch of a short command.
    static func makeCodecCases() throws -> [CodecCase] {
        var finished = Opq_V1_Finished(OperationID(42), attempt: 1, report: .exited(0), duration: 0.004)
        var raw: [[UInt8]] = []
        finished.attachOutput(stdout: Array("ok\n".utf8), stderr: [], to: &raw)
        var reports = Opq_V1_WorkerMessage.reports([.started(OperationID(42), attempt: 1), .finished(finished)])
        reports.reports.sequence = 7
        reports.leaseRequest = 123_456_789
        let short = Opq_V1_Dispatch(OperationID(42), attempt: 1, details: Scheduler.DispatchDetails(
            name: "", job: JobID(3), queue: "default", work: .command(Command(["true"])), qualityOfService: .default, timeout: nil),
            killGrace: 10)
        var orders = Opq_V1_CoordinatorToWorker.orders([.dispatch(short)])
        orders.reportsDurable = 6
        orders.leaseEcho = 123_456_789
        return try [codecCase("reports", "Reports (started + finished)", reports, rawFrames: raw.count),
                    codecCase("orders", "Orders (1 dispatch: true)", orders, rawFrames: 0)]
    }

    static func codecCase<M: WireEnvelope>(_ key: String, _ name: String, _ message: M, rawFrames: Int) throws -> CodecCase {
        let bytes: [UInt8] = try message.serializedBytes()
        guard try message.encodedBytes() == bytes else { throw ClusterBenchError("\(name): the hand-written bytes differ from SwiftProtobuf's") }
        guard try M.decoded(bytes, rawFrames: rawFrames).isEqualTo(message: message),
              try M.decodedBySwiftProtobuf(bytes, rawFrames: rawFrames).isEqualTo(message: message) else {
            throw ClusterBenchError("\(name): the message did not survive its round trip")
        }
        return CodecCase(name: name, runs: [
            .init(name: key + "-encode-old") { _ = try message.serializedBytes() as [UInt8] },
            .init(name: key + "-encode-new") { _ = try message.encodedBytes() },
            .init(name: key + "-decode-old") { _ = try M.decodedBySwiftProtobuf(bytes, rawFrames: rawFrames) },
            .init(name: key + "-decode-new") { _ = try M.decoded(bytes, rawFrames: rawFrames) },
        ])
    }

    static func measured<M: WireEnvelope>(_ name: String, _ message: M, raw: [[UInt8]] = []) throws -> Case {
        let frames = try Frames.encode(message, raw: raw)
        let decoded = try Frames.decode(frames, as: M.self)
        guard decoded.message.isEqualTo(message: message) else { throw ClusterBenchError("\(name): the message did not survive its round trip") }
        let json: [UInt8] = try message.jsonUTF8Bytes()
        return Case(
            name: name, frameBytes: frames.reduce(0) { $0 + $1.count }, jsonBytes: json.count,
            opq: { _ = try Frames.decode(try Frames.encode(message, raw: raw), as: M.self) },
            json: { _ = try M(jsonUTF8Bytes: try message.jsonUTF8Bytes() as [UInt8]) })
    }
}
