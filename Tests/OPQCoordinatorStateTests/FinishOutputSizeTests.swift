import OPQCore
@testable import OPQCoordinator
import OPQWire
import Testing

/// A finish sent to a watch carries the sizes of its command's output (`OperationEvent.stdout_bytes`,
/// `stderr_bytes`), so `opq map` asks for no output when a command printed none (issue 19).
@Suite struct FinishOutputSizeTests {
    /// The operation events of every `Events` message the turn sent to `client`.
    static func events(_ actions: [CoordinatorAction], to client: String) throws -> [Opq_V1_OperationEvent] {
        var events: [Opq_V1_OperationEvent] = []
        for case .notice(let frames) in actions {
            let (identity, message, _) = try Frames.decodeRouted(frames, as: Opq_V1_CoordinatorToClient.self)
            guard identity == Array(client.utf8), case .events(let batch)? = message.body else { continue }
            events += batch.items.compactMap { if case .operation(let change)? = $0.kind { change } else { nil } }
        }
        return events
    }

    @Test func aFinishByAReportCarriesItsOutputSizes() throws {
        var d = StateDriver()
        _ = try d.register("w1", slots: 2)
        _ = try d.submit(1, ["quiet", "loud"])
        _ = d.turn()
        _ = try d.client("alice", 2) { $0.watch.job = 1 }
        _ = d.turn()
        _ = try d.finished("w1", 1, status: .succeeded, exitCode: 0, stdout: 0, stderr: 0, sequence: 1)
        _ = try d.finished("w1", 2, status: .failed, exitCode: 3, stdout: 12, stderr: 5, sequence: 2)
        let finishes = try Self.events(d.state.finishTurn(now: d.now), to: "alice").filter { $0.state == .finished }
        #expect(finishes.map(\.operation) == [1, 2])
        #expect(finishes.map(\.hasStdoutBytes) == [true, true] && finishes.map(\.hasStderrBytes) == [true, true])
        #expect(finishes.map(\.stdoutBytes) == [0, 12] && finishes.map(\.stderrBytes) == [0, 5])
    }

    @Test func aFinishWithoutItsOwnReportCarriesNoSizes() throws {
        var d = StateDriver()
        _ = try d.register("w1")
        _ = try d.submit(1, ["ran", "waited"])
        _ = d.turn()
        _ = try d.client("alice", 2) { $0.watch.job = 1 }
        _ = d.turn()
        // "waited" is cancelled before it ran: no report of it, nothing known of its output.
        _ = try d.client("alice", 3) { $0.cancel.operation = 2 }
        _ = try d.finished("w1", 1, status: .succeeded, exitCode: 0, stdout: 4, stderr: 0, sequence: 1)
        let finishes = try Self.events(d.state.finishTurn(now: d.now), to: "alice").filter { $0.state == .finished }
        #expect(finishes.map(\.operation).sorted() == [1, 2])
        let waited = try #require(finishes.first { $0.operation == 2 })
        #expect(!waited.hasStdoutBytes && !waited.hasStderrBytes)
        let ran = try #require(finishes.first { $0.operation == 1 })
        #expect(ran.hasStdoutBytes && ran.stdoutBytes == 4 && ran.stderrBytes == 0)
    }
}
