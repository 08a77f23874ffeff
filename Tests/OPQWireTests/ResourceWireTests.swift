import OPQCore
import OPQWire
import Testing

/// CPUs and memory on the wire (README "Resources"): carried by submissions and registrations both
/// ways, absent values read as the defaults, and anything beyond the documented range refused by field.
@Suite struct ResourceWireTests {
    @Test func anOperationsResourcesSurviveTheWire() throws {
        var spec = OperationSpec(name: "render", work: .command(Command(["true"])))
        spec.resources = Resources(cpus: 8, memory: 16 << 30)
        let request = Opq_V1_ClientRequest.request(1) { $0.submit = Opq_V1_Submit(Submission([spec, OperationSpec(name: "plain")])) }
        let decoded = try roundTrip(request).message
        let back = Submission(decoded.submit)
        #expect(back.operations.map(\.resources) == [Resources(cpus: 8, memory: 16 << 30), .default])
        #expect(decoded.submit.operations[1].cpus == 0, "the default 1 cpu is sent as absent")
    }

    @Test func aWorkersCapacityIsAnnouncedOrAbsent() throws {
        var register = Samples.workerMessages[0]
        #expect(register.register.announcedCpus == nil && register.register.announcedMemory == nil)
        register.register.announcedCpus = 8
        register.register.announcedMemory = 0
        let decoded = try roundTrip(register).message
        #expect(decoded.register.announcedCpus == 8 && decoded.register.announcedMemory == 0, "0 bytes announced is not 'none'")
    }

    @Test func resourcesBeyondTheirRangeAreRefusedNamingTheField() {
        var register = Samples.workerMessages[0]
        register.register.cpus = UInt32(Limits.maxCpus) + 1
        #expect(decodeError(register)?.field == "WorkerMessage.register.cpus")
        register.register.cpus = 1
        register.register.memoryBytes = .max
        #expect(decodeError(register)?.field == "WorkerMessage.register.memory_bytes")
        #expect(decodeError(Opq_V1_ClientRequest.request(1) { $0.submit.operations = [.with { $0.cpus = .max }] })?.field
            == "ClientRequest.submit.operations[0].cpus")
        #expect(decodeError(Opq_V1_ClientRequest.request(1) { $0.submit.operations = [.with { $0.memoryBytes = UInt64(Limits.maxMemory) + 1 }] })?.field
            == "ClientRequest.submit.operations[0].memory_bytes")
        #expect(decodeError(Opq_V1_ClientRequest.request(1) { $0.submit.operations = [.with { $0.memoryBytes = UInt64(Limits.maxMemory) }] }) == nil)
    }
}
