import Foundation
import OPQClient
import OPQCore
import Testing

/// Running output pushed to a watch that asked for it (`Watch.include_output`, `opq map --line-buffer`):
/// a real coordinator and worker over ZeroMQ.
@Suite(.serialized) struct OutputPushTests {
    @Test func aWatchWithOutputGetsARunningCommandsLineBeforeTheCommandEnds() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1")
        let fifo = cluster.path("go")
        #expect(mkfifo(fifo, 0o600) == 0)
        let client = try CoordinatorClient(endpoint: cluster.clientsEndpoint)
        let receipt = try client.submit(Submission([OperationSpec(
            name: "talker", work: .command(Command(["/bin/sh", "-c", #"echo first; read line < "$0"; echo second"#, fifo])))]))
        try client.watch(.job(receipt.job), includeOutput: true)
        var pieces: [OutputPiece] = []
        let end = ContinuousClock.now + .seconds(60)
        while !pieces.contains(where: { String(decoding: $0.bytes, as: UTF8.self).contains("first") }), ContinuousClock.now < end {
            if case .output(let piece) = try client.nextWatchUpdate(until: end) { pieces.append(piece) }
        }
        #expect(pieces.map { String(decoding: $0.bytes, as: UTF8.self) } == ["first\n"], "\(cluster.logs)")
        #expect(pieces.first.map { ($0.operation, $0.stream, $0.offset, $0.attempt) } ?? (OperationID(0), .standardError, 9, 0)
                    == (receipt.operations[0], .standardOutput, 0, 1))
        // The command still blocks on the fifo: the line came while it ran.
        #expect(try client.operation(receipt.operations[0]).state == .executing)
        let writer = open(fifo, O_WRONLY)
        #expect(writer >= 0)
        _ = "go\n".withCString { write(writer, $0, 3) }
        close(writer)
        var second: OutputPiece?
        var finished = false
        while !finished, ContinuousClock.now < end {
            switch try client.nextWatchUpdate(until: end) {
            case .output(let piece): second = piece
            case .events(let events): finished = events.contains { if case .jobFinished = $0 { true } else { false } }
            default: break
            }
        }
        #expect(finished)
        #expect(second.map { String(decoding: $0.bytes, as: UTF8.self) } == "second\n" && second?.offset == 6)
    }

    @Test func aWatchWithoutOutputGetsNone() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        try cluster.startWorker("w1")
        let client = try CoordinatorClient(endpoint: cluster.clientsEndpoint)
        let receipt = try client.submit(Submission([OperationSpec(name: "talker", work: .command(Command(["/bin/echo", "hello"])))]))
        try client.watch(.job(receipt.job))
        let end = ContinuousClock.now + .seconds(60)
        var finished = false
        var outputs = 0
        while !finished, ContinuousClock.now < end {
            switch try client.nextWatchUpdate(until: end) {
            case .output: outputs += 1
            case .events(let events): finished = events.contains { if case .jobFinished = $0 { true } else { false } }
            case .snapshot(let snapshot): finished = snapshot.finishedJobs.contains(receipt.job)
            default: break
            }
        }
        #expect(finished && outputs == 0)
    }
}
