import OPQCore
import Testing
import OPQWire

/// Operation specs are written straight to bytes (`ProtobufWriter.operationSpec`) when they hold no map and
/// at most one command; those bytes must be SwiftProtobuf's, field for field, for every such spec.
@Suite struct SubmitDirectEncodingTests {
    /// A spec with every field the direct encoding writes set at random (seeded), some at their
    /// defaults, some at extremes; now and then a map or other work, which goes through SwiftProtobuf.
    static func randomSpec(_ random: inout SplitMix64) -> OperationSpec {
        func text() -> String {
            ["", "a", "op-1", "ü✓", String(repeating: "x", count: Int.random(in: 100...300, using: &random))].randomElement(using: &random)!
        }
        func paths() -> [String] { (0..<Int.random(in: 0...2, using: &random)).map { _ in text() } }
        func large() -> UInt64 { [0, 1, 127, 128, 300, UInt64(UInt32.max), UInt64.max].randomElement(using: &random)! }
        var spec = OperationSpec(name: text(), queue: ["", "default", "q"].randomElement(using: &random)!)
        switch Int.random(in: 0..<8, using: &random) {
        case 0: spec.work = .empty
        case 1: spec.work = .handler(name: "h", payload: [1, 2])
        case 2: spec.work = .commands([Command(["a"]), Command(["b"])])
        case 3: spec.work = .command(Command(["env"], environment: ["A": "1"]))
        default:
            var command = Command((0..<Int.random(in: 0...4, using: &random)).map { _ in text() },
                                  workingDirectory: Bool.random(using: &random) ? text() : nil)
            command.inputs = paths()
            command.outputs = paths()
            spec.work = .command(command)
        }
        spec.dependencies = (0..<Int.random(in: 0...3, using: &random)).map { _ in
            Bool.random(using: &random) ? .name(text()) : .id(OperationID(large()))
        }
        spec.priority = QueuePriority.allCases.randomElement(using: &random)!
        spec.qualityOfService = QualityOfService.allCases.randomElement(using: &random)!
        spec.requires = Bool.random(using: &random) ? .any : .success
        spec.retries = [0, 1, 127, 128, Int(UInt32.max), Int.max].randomElement(using: &random)!
        spec.timeout = [nil, 0, 1.5, 1e300, -2].randomElement(using: &random)!
        if Int.random(in: 0..<8, using: &random) == 0 { spec.labels = ["gpu": "yes"] }
        spec.isBarrier = Bool.random(using: &random)
        spec.dependants = (0..<Int.random(in: 0...3, using: &random)).map { _ in OperationID(large()) }
        spec.resources = Resources(cpus: [0, 1, 2, 300, Int.max].randomElement(using: &random)!,
                                   memory: [0, 1, 1 << 40, Int.max].randomElement(using: &random)!)
        spec.reservation = [nil, OperationID(0), OperationID(5), OperationID(UInt64.max)].randomElement(using: &random)!
        spec.isCancelled = Bool.random(using: &random)
        return spec
    }

    @Test func directlyWrittenSpecsAreSwiftProtobufsBytes() throws {
        var random = SplitMix64(seed: 19)
        for round in 0..<200 {
            let submission = Submission((0..<Int.random(in: 1...20, using: &random)).map { _ in Self.randomSpec(&random) })
            let whole: [UInt8] = try Opq_V1_Submit(submission, idempotencyKey: "k").serializedBytes()
            #expect(try Opq_V1_Submit.encodedBytes(submission, idempotencyKey: "k") == whole, "round \(round)")
            let decoded = try Opq_V1_Submit(serializedBytes: try Opq_V1_Submit.encodedBytes(submission))
            #expect(decoded == Opq_V1_Submit(submission), "round \(round)")
        }
    }
}
