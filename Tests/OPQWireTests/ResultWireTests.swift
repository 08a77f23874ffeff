import Foundation
import OPQCore
import OPQWire
import Testing

/// A handler's result on the wire: a raw frame of the Finished report, and dependencies' outcomes in a
/// dispatch; what points nowhere or names no outcome is refused, naming the field.
@Suite struct ResultWireTests {
    @Test func aFinishedResultFrameThatIsMissingIsRefusedNamingTheField() {
        var finished = Samples.finished
        finished.result.frame = 2
        #expect(decodeError(Opq_V1_WorkerMessage.reports([.finished(finished)]), raw: [[1]])?.field
            == "WorkerMessage.reports.items[0].finished.result.frame")
        finished.result.frame = 1
        #expect(decodeError(Opq_V1_WorkerMessage.reports([.finished(finished)]), raw: [[1]]) == nil)
    }

    @Test func aDispatchedDependencyWithoutAnIdOrWithAnUnknownOutcomeIsRefused() {
        func error(_ dependency: Opq_V1_DependencyOutcome) -> WireError? {
            var dispatch = Samples.dispatch
            dispatch.dependencies = [.with { $0.operation = 3; $0.outcome = .succeeded; $0.result = .init([1, 2] as [UInt8]) }, dependency]
            return decodeError(Opq_V1_CoordinatorToWorker.orders([.dispatch(dispatch)]))
        }
        let path = "CoordinatorToWorker.orders.items[0].dispatch.dependencies[1]"
        #expect(error(.with { $0.operation = 0; $0.outcome = .failed })?.field == path + ".operation")
        #expect(error(.with { $0.operation = 4; $0.outcome = .UNRECOGNIZED(9) }) == .unknownEnumValue(field: path + ".outcome", value: 9))
        #expect(error(.with { $0.operation = 4; $0.outcome = .cancelled; $0.resultOmitted = true }) == nil)
    }
}
