import Foundation
import OPQCore
@testable import OPQCoordinator
import OPQWire
import Testing

/// What a dispatch carries of its dependencies' results (README "Handler results"): every finished
/// explicit dependency for a handler, only those with a result for commands, nothing while no operation
/// has a result, and results only up to `Limits.maxDispatchResultBytes` in all.
@Suite struct ResultStateTests {
    /// Operations a, b (both finished: a succeeded, b failed) and c after both, on worker w1.
    private func finishedPair() throws -> StateDriver {
        var d = StateDriver()
        _ = try d.register("w1", slots: 2)
        _ = try d.submit(1, ["a", "b", "c"], after: ["c": ["a", "b"]])
        _ = d.turn()
        _ = try d.started("w1", 1, sequence: 1)
        _ = try d.started("w1", 2, sequence: 2)
        _ = try d.finished("w1", 1, sequence: 3)
        _ = try d.finished("w1", 2, status: .failed, exitCode: 1, sequence: 4)
        _ = d.turn()
        return d
    }

    private let handler = Work.handler(name: "sum", payload: [])
    private let command = Work.command(Command(["/bin/true"]))

    @Test func aHandlerSeesEveryFinishedDependencyAndACommandOnlyThoseWithAResult() throws {
        var d = try finishedPair()
        let c = OperationID(3)
        let seen = d.state.dependencyOutcomes(of: c, work: handler)
        #expect(seen.map(\.name) == ["a", "b"] && seen.map(\.outcome) == [.succeeded, .failed])
        #expect(seen.allSatisfy { $0.result.isEmpty && !$0.resultOmitted })
        #expect(d.state.dependencyOutcomes(of: c, work: command).isEmpty, "no operation has a result: commands get nothing")

        d.state.results.record(Array("42".utf8), for: OperationID(1))
        let withResult = d.state.dependencyOutcomes(of: c, work: handler)
        #expect(withResult.map { Array($0.result) } == [Array("42".utf8), []])
        let forCommand = d.state.dependencyOutcomes(of: c, work: command)
        #expect(forCommand.map(\.name) == ["a"] && forCommand.map { Array($0.result) } == [Array("42".utf8)])
    }

    @Test func resultsPastTheDispatchBoundAreLeftOutAndMarked() throws {
        // Nine dependencies with 1 MiB results each: eight fit the 8 MiB bound, the ninth is left out.
        var d = StateDriver()
        _ = try d.register("w1", slots: 9)
        let names = (1...9).map { "d\($0)" }
        _ = try d.submit(1, names + ["sum"], after: ["sum": names])
        _ = d.turn()
        var sequence: UInt64 = 0
        for id in 1...9 as ClosedRange<UInt64> {
            sequence += 1
            _ = try d.started("w1", id, sequence: sequence)
            sequence += 1
            _ = try d.finished("w1", id, sequence: sequence)
            d.state.results.record([UInt8](repeating: UInt8(id), count: Limits.maxResultBytes), for: OperationID(id))
        }
        _ = d.turn()
        #expect(Limits.maxDispatchResultBytes == 8 * Limits.maxResultBytes)
        let seen = d.state.dependencyOutcomes(of: OperationID(10), work: handler)
        #expect(seen.map(\.name) == names)
        #expect(seen.prefix(8).allSatisfy { $0.result.count == Limits.maxResultBytes && !$0.resultOmitted })
        #expect(seen[8].result.isEmpty && seen[8].resultOmitted && seen[8].outcome == .succeeded)
    }

    @Test func aResultOverTheLimitIsNotKeptAndAnEmptyOneKeepsTheEarlier() {
        var store = ResultStore()
        store.record([UInt8](repeating: 0, count: Limits.maxResultBytes + 1), for: OperationID(1))
        #expect(store[OperationID(1)] == nil && store.isEmpty)
        store.record([1, 2, 3], for: OperationID(1))
        store.record([], for: OperationID(1))
        #expect(store[OperationID(1)] == [1, 2, 3] && store.bytes == 3)
        store.remove(OperationID(1))
        #expect(store.isEmpty && store.bytes == 0)
    }
}

/// Orders to one worker are split so that no `Orders` message passes the frame limit with results.
@Suite struct OrderBatchTests {
    private func dispatch(_ id: UInt64, resultBytes: Int) -> Opq_V1_Order {
        .dispatch(.with {
            $0.operation = id
            $0.attempt = 1
            if resultBytes > 0 {
                $0.dependencies = [.with { $0.operation = 1; $0.outcome = .succeeded; $0.result = .init(repeating: 1, count: resultBytes) }]
            }
        })
    }

    @Test func ordersAreBatchedByCountAndByResultBytes() {
        let plain = (1...250_001).map { dispatch(UInt64($0), resultBytes: 0) }
        #expect(plain.orderBatches().map(\.count) == [100_000, 100_000, 50_001])
        let heavy = (1...9).map { dispatch(UInt64($0), resultBytes: 8 << 20) }
        #expect(heavy.orderBatches().map(\.count) == [4, 4, 1], "32 MiB of results per message at most")
        #expect([Opq_V1_Order]().orderBatches().isEmpty)
    }
}
