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
        // The command prints nothing until the watch is on: a line printed before would reach the watch only
        // as "stdout has reached 6 bytes" (an empty piece: read the rest from the spool), not as a push.
        let start = cluster.path("start"), fifo = cluster.path("go")
        #expect(mkfifo(start, 0o600) == 0 && mkfifo(fifo, 0o600) == 0)
        let client = try CoordinatorClient(endpoint: cluster.clientsEndpoint)
        let receipt = try client.submit(Submission([OperationSpec(
            name: "talker", work: .command(Command(["/bin/sh", "-c", #"read line < "$0"; echo first; read line < "$1"; echo second"#, start, fifo])))]))
        try client.watch(.job(receipt.job), includeOutput: true)
        let end = ContinuousClock.now + .seconds(60)
        // Executing (the shell is about to open the fifo): then the write below blocks only until it does.
        var executing = false
        while !executing, ContinuousClock.now < end {
            switch try client.nextWatchUpdate(until: end) {
            case .snapshot(let snapshot): executing = snapshot.operations.contains { $0.state == .executing }
            case .events(let events): executing = events.contains { if case .stateChanged(let change) = $0 { change.state == .executing } else { false } }
            default: break
            }
        }
        #expect(executing, "\(cluster.logs)")
        let starter = open(start, O_WRONLY)
        #expect(starter >= 0)
        _ = "go\n".withCString { write(starter, $0, 3) }
        close(starter)
        var pieces: [OutputPiece] = []
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
