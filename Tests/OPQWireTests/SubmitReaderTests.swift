import OPQCore
import OPQWire
import SwiftProtobuf
import Testing

/// The coordinator's reading of a client's request (`Frames.decodeClientRequest`: a Submit read by hand
/// straight into the core's `Submission`) against SwiftProtobuf's decoding, its validation and the
/// conversion, its reference: the same submission or the same `WireError`, for seeded random submissions,
/// their extremes and bytes a client may reorder, extend, repeat or break. Its speed is measured by
/// `opq-bench jobfile`, not here.
@Suite struct SubmitReaderTests {
    /// What a decode gave, comparable: the request and its submission as wire messages (the core values
    /// are not `Equatable`; their wire form is total and keeps every field), or the error.
    enum Outcome: Equatable, CustomStringConvertible {
        case request(Opq_V1_ClientRequest)
        case error(WireError)

        /// Equal requests (NaN-holding ones compared as text) or equal errors.
        static func == (a: Outcome, b: Outcome) -> Bool {
            switch (a, b) {
            case let (.request(a), .request(b)): a == b || a.textFormatString() == b.textFormatString()
            case let (.error(a), .error(b)): a == b
            default: false
            }
        }

        /// The outcome of the reading under test.
        static func read(_ frames: [[UInt8]]) -> Outcome {
            do throws(WireError) {
                let received = try Frames.decodeClientRequest(frames)
                var message = received.message
                if let submission = received.submission {
                    guard case .submit(let submit) = message.body, submit == Opq_V1_Submit() else {
                        return .error(.invalidField("test", problem: "a submission beside \(message.body.debugDescription)"))
                    }
                    message.submit = Opq_V1_Submit(submission, idempotencyKey: submission.idempotencyKey)
                } else if case .submit = message.body {
                    return .error(.invalidField("test", problem: "a Submit without its submission"))
                }
                return .request(message)
            } catch {
                return .error(error)
            }
        }

        /// The reference: SwiftProtobuf's decoding and validation, a Submit converted to the core's values and back.
        static func reference(_ frames: [[UInt8]]) -> Outcome {
            do throws(WireError) {
                var message = try Frames.decodeRouted(frames, as: Opq_V1_ClientRequest.self).message
                if case .submit(let submit) = message.body {
                    message.submit = Opq_V1_Submit(Submission(submit), idempotencyKey: submit.idempotencyKey)
                }
                return .request(message)
            } catch {
                return .error(error)
            }
        }

        var description: String {
            switch self {
            case .request(let message): "request \(message.textFormatString().prefix(2_000))"
            case .error(let error): "error \(error)"
            }
        }
    }

    /// The frames a client's request `bytes` arrive in on the coordinator's ROUTER socket.
    static func frames(_ bytes: [UInt8], raw: Int = 0) -> [[UInt8]] {
        [[0, 1, 2, 3], Frames.signature, bytes] + Array(repeating: [7], count: raw)
    }

    /// Records a difference between the reading and its reference; true when they agree.
    @discardableResult
    static func agree(_ bytes: [UInt8], raw: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let read = Outcome.read(frames(bytes, raw: raw)), reference = Outcome.reference(frames(bytes, raw: raw))
        guard read == reference else {
            Issue.record("bytes \(bytes.prefix(400).map { String($0, radix: 16) }): read \(read), reference \(reference)",
                         sourceLocation: sourceLocation)
            return false
        }
        return true
    }

    /// A spec of the shape job files send (read by hand) most of the time; now and then one of
    /// `SubmitDirectEncodingTests.randomSpec`'s (unless `varied` is false), with maps, other work and values out of range.
    static func randomSpec(_ random: inout SplitMix64, varied: Bool = true) -> OperationSpec {
        if varied, Int.random(in: 0..<4, using: &random) == 0 { return SubmitDirectEncodingTests.randomSpec(&random) }
        func text() -> String { ["", "a", "op-17", "ü✓", String(repeating: "x", count: Int.random(in: 16...300, using: &random))].randomElement(using: &random)! }
        var spec = OperationSpec(name: text(), queue: ["", "default", "q", "ü"].randomElement(using: &random)!)
        if Int.random(in: 0..<5, using: &random) != 0 {
            var command = Command((0..<Int.random(in: 0...4, using: &random)).map { _ in text() },
                                  workingDirectory: Bool.random(using: &random) ? text() : nil)
            command.inputs = (0..<Int.random(in: 0...2, using: &random)).map { _ in text() }
            command.outputs = (0..<Int.random(in: 0...2, using: &random)).map { _ in text() }
            spec.work = .command(command)
        }
        spec.dependencies = (0..<Int.random(in: 0...3, using: &random)).map { _ in
            Bool.random(using: &random) ? .name(["a", "op-3", "ü"].randomElement(using: &random)!)
                : .id(OperationID([1, 127, 128, UInt64.max].randomElement(using: &random)!))
        }
        spec.priority = QueuePriority.allCases.randomElement(using: &random)!
        spec.qualityOfService = QualityOfService.allCases.randomElement(using: &random)!
        spec.requires = Bool.random(using: &random) ? .any : .success
        spec.retries = [0, 1, 3, Limits.maxRetries].randomElement(using: &random)!
        spec.timeout = [nil, 0, 1.5, -0.0, .infinity].randomElement(using: &random)!
        spec.isBarrier = Bool.random(using: &random)
        spec.resources = Resources(cpus: [0, 1, 2, Limits.maxCpus].randomElement(using: &random)!,
                                   memory: [0, 1 << 30, Limits.maxMemory].randomElement(using: &random)!)
        spec.reservation = [nil, nil, OperationID(OperationID.reservationBase + 1)].randomElement(using: &random)!
        spec.isCancelled = Int.random(in: 0..<8, using: &random) == 0
        return spec
    }

    /// A Submit request of 0…12 random specs, sometimes with queue settings and an idempotency key.
    static func randomRequest(_ random: inout SplitMix64, varied: Bool = true) throws -> [UInt8] {
        var submission = Submission((0..<Int.random(in: 0...12, using: &random)).map { _ in randomSpec(&random, varied: varied) })
        if Int.random(in: 0..<4, using: &random) == 0 {
            submission.queueSettings = [("", QueueSettings()), ("q", QueueSettings(maxConcurrent: -1, isSuspended: false)),
                                        ("r", QueueSettings(maxConcurrent: Int(Int32.max), isSuspended: true))]
        }
        let key = ["", "", "opq-submit-1", String(repeating: "k", count: Limits.maxNameBytes + Int.random(in: 0...1, using: &random))]
            .randomElement(using: &random)!
        return try Opq_V1_ClientRequest.encodedSubmit(UInt64.random(in: 0...UInt64.max, using: &random), submission, idempotencyKey: key)
    }

    @Test func randomSubmissionsAreReadAsSwiftProtobufReadsThem() throws {
        var random = SplitMix64(seed: 190)
        var readByHand = 0
        for _ in 0..<1_500 {
            let bytes = try Self.randomRequest(&random)
            guard Self.agree(bytes) else { return }
            if Opq_V1_ClientRequest.handReadSubmit(bytes) != nil { readByHand += 1 }
        }
        #expect(readByHand > 150, "only \(readByHand) of 1,500 submissions were read by hand")
    }

    @Test func aJobFilesSubmissionIsReadByHandWithEveryField() throws {
        var command = Command(["true", "ü✓", ""], workingDirectory: "/tmp")
        command.inputs = ["in/*.txt"]
        command.outputs = ["out.txt"]
        var spec = OperationSpec(name: "op-1", queue: "", work: .command(command), dependencies: [.name("op-0"), .id(OperationID(42))],
                                 priority: .veryHigh, qualityOfService: .utility, requires: .success, retries: 3, timeout: 2.5,
                                 isBarrier: true, reservation: OperationID(OperationID.reservationBase + 7), isCancelled: true)
        spec.resources = Resources(cpus: 4, memory: 1 << 20)
        let submission = Submission([OperationSpec(name: "op-0"), spec], queueSettings: [("q", QueueSettings(maxConcurrent: 2))])
        let bytes = try Opq_V1_ClientRequest.encodedSubmit(9, submission, idempotencyKey: "key")
        let received = try #require(Opq_V1_ClientRequest.handReadSubmit(bytes))
        #expect(received.message.requestID == 9)
        let read = try #require(received.submission)
        #expect(read.idempotencyKey == "key")
        #expect(read.operations.count == 2 && read.operations[0].queue == "default" && read.operations[0].work == .empty)
        #expect(read.operations[1].work == .command(command) && read.operations[1].dependencies == [.name("op-0"), .id(OperationID(42))])
        #expect(read.operations[1].resources == spec.resources && read.operations[1].reservation == spec.reservation)
        #expect(read.queueSettings.count == 1 && read.queueSettings[0].queue == "q" && read.queueSettings[0].settings.maxConcurrent == 2)
        Self.agree(bytes)
    }

    @Test func extremesAndValuesTheValidationRefusesGiveTheSameValueOrError() throws {
        let long = String(repeating: "n", count: Limits.maxNameBytes)
        func submit(_ change: (inout Opq_V1_OperationSpec) -> Void) throws -> [UInt8] {
            var spec = Opq_V1_OperationSpec()
            spec.name = "a"
            change(&spec)
            return try Opq_V1_ClientRequest.with { $0.requestID = 5; $0.submit = .with { $0.operations = [Opq_V1_OperationSpec(), spec] } }
                .serializedBytes()
        }
        let cases: [(String, (inout Opq_V1_OperationSpec) -> Void)] = [
            ("longest name", { $0.name = long }), ("name too long", { $0.name = long + "n" }), ("queue too long", { $0.queue = long + "q" }),
            ("priority min", { $0.priority = .min }), ("priority max", { $0.priority = .max }), ("priority -3", { $0.priority = -3 }),
            ("unknown qos", { $0.qos = .UNRECOGNIZED(77) }), ("unknown requirement", { $0.requires = .UNRECOGNIZED(-1) }),
            ("most retries", { $0.retries = WireLimits.maxRetries }), ("too many retries", { $0.retries = WireLimits.maxRetries + 1 }),
            ("most cpus", { $0.cpus = WireLimits.maxCpus }), ("too many cpus", { $0.cpus = WireLimits.maxCpus + 1 }),
            ("most memory", { $0.memoryBytes = WireLimits.maxMemory }), ("too much memory", { $0.memoryBytes = WireLimits.maxMemory + 1 }),
            ("a reservation", { $0.reservation = OperationID.reservationBase + 1 }), ("not a reservation", { $0.reservation = 5 }),
            ("NaN timeout", { $0.timeoutSeconds = .nan }), ("negative timeout", { $0.timeoutSeconds = -1 }),
            ("empty dependency", { $0.dependencies = [Opq_V1_DependencyRef()] }),
            ("empty dependency name", { $0.dependencies = [.with { $0.name = "" }] }),
            ("dependency id 0", { $0.dependencies = [.with { $0.id = 0 }] }),
            ("dependency name too long", { $0.dependencies = [.with { $0.name = long + "d" }] }),
            ("empty work", { $0.work = Opq_V1_Work() }), ("empty command", { $0.work.command = Opq_V1_Command() }),
            ("working directory too long", { $0.work.command.workingDirectory = long + "w" }),
            ("empty working directory", { $0.work.command.workingDirectory = "" }),
            ("environment", { $0.work.command.environment = ["A": "1"] }), ("empty environment key", { $0.work.command.environment = ["": "1"] }),
            ("labels", { $0.labels = ["gpu": "yes"] }), ("dependants", { $0.dependants = [1, 2] }), ("dependant 0", { $0.dependants = [0] }),
            ("handler", { $0.work.handler.name = "h" }), ("commands", { $0.work.commands.commands = [Opq_V1_Command()] }),
            ("many arguments", { $0.work.command.argv = Array(repeating: "x", count: WireLimits.maxListEntries) }),
            ("too many arguments", { $0.work.command.argv = Array(repeating: "x", count: WireLimits.maxListEntries + 1) }),
            ("too many inputs", { $0.work.command.inputs = Array(repeating: "i", count: WireLimits.maxListEntries + 1) }),
            ("too many dependencies", { $0.dependencies = Array(repeating: .with { $0.id = 1 }, count: WireLimits.maxListEntries + 1) }),
        ]
        for (name, change) in cases {
            #expect(Self.agree(try submit(change)), "\(name)")
        }
        let tooLong = Opq_V1_QueueSettings.with { $0.queue = long + "q" }
        for request in [
            Opq_V1_ClientRequest.with { $0.submit = Opq_V1_Submit() },
            Opq_V1_ClientRequest.with { $0.requestID = .max; $0.submit = .with { $0.idempotencyKey = long + "k" } },
            Opq_V1_ClientRequest.with { $0.submit = .with { $0.queueSettings = [tooLong] } },
            Opq_V1_ClientRequest.with { $0.submit = .with { $0.queueSettings = [.with { $0.maxConcurrent = .min; $0.suspended = false }] } },
            Opq_V1_ClientRequest.with { $0.requestID = 3 },
            Opq_V1_ClientRequest.with { $0.cancel = .with { $0.job = 4 } },
            Opq_V1_ClientRequest.with { $0.listJobs = Opq_V1_ListJobs() },
        ] {
            for raw in 0...2 { #expect(Self.agree(try request.serializedBytes(), raw: raw), "\(request.textFormatString())") }
        }
        #expect(Self.agree([0xFF]))
        #expect(Self.agree([]))
    }

    @Test func framesAreCheckedAsForAnyOtherRequest() throws {
        let bytes = try Opq_V1_ClientRequest.encodedSubmit(1, Submission([OperationSpec(name: "a")]))
        for frames in [[], [[1]], [[1], Array("OPQ/2".utf8), bytes], [[1], Frames.signature], [[1], Frames.signature, bytes]] as [[[UInt8]]] {
            let read = Outcome.read(frames), reference = Outcome.reference(frames)
            #expect(read == reference, "\(frames.count) frames: read \(read), reference \(reference)")
        }
    }

    @Test func changedAndBrokenSubmissionsAreReadAsSwiftProtobufReadsThem() throws {
        var random = SplitMix64(seed: 191)
        var readByHand = 0, cases = 0
        for _ in 0..<600 {
            var bytes = try Self.randomRequest(&random, varied: false)
            for _ in 0..<6 {
                bytes = WireMutations.mutate(bytes, &random)
                cases += 1
                guard Self.agree(bytes, raw: Int.random(in: 0...1, using: &random)) else { return }
                if Opq_V1_ClientRequest.handReadSubmit(bytes) != nil { readByHand += 1 }
            }
        }
        // Shuffled fields, long varints and repeated scalars stay on the hand-written path; the rest falls back.
        #expect(readByHand > cases / 10, "only \(readByHand) of \(cases) changed submissions were read by hand")
    }
}
