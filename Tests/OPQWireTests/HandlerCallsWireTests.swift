import Foundation
import OPQCore
import OPQWire
import Testing

/// An operation made of several handler calls (a remote `BlockOperation`'s execution blocks) on the
/// wire: it round-trips through a submission and a dispatch; too many calls, too many payload bytes or a
/// dispatched call without a handler name are refused, naming the field; the core names the operation.
@Suite struct HandlerCallsWireTests {
    static let calls = [HandlerCall("resize", text: "a.png"), HandlerCall("sha256", payload: [0, 255]), HandlerCall("noop")]

    @Test func handlerCallsRoundTripThroughASubmissionAndADispatch() throws {
        let spec = OperationSpec(name: "thumbs", work: .handlers(Self.calls))
        let submitted = try roundTrip(Opq_V1_ClientRequest.request(1) { $0.submit = Opq_V1_Submit(Submission([spec]), idempotencyKey: "k") })
        #expect(Submission(submitted.message.submit).operations.first?.work == .handlers(Self.calls))

        var dispatch = Samples.dispatch
        dispatch.work = Opq_V1_Work(.handlers(Self.calls))
        let sent = try roundTrip(Opq_V1_CoordinatorToWorker.orders([.dispatch(dispatch)]))
        guard case .dispatch(let received)? = sent.message.orders.items.first?.kind else {
            Issue.record("no dispatch came back")
            return
        }
        #expect(Work(received.work) == .handlers(Self.calls))
    }

    @Test func tooManyCallsOrPayloadBytesAreRefusedNamingTheField() {
        func submitError(_ work: Work) -> WireError? {
            decodeError(Opq_V1_ClientRequest.request(1) { $0.submit.operations = [.with { $0.work = Opq_V1_Work(work) }] })
        }
        let many = [HandlerCall](repeating: HandlerCall("noop"), count: Limits.maxHandlerCallsPerOperation + 1)
        #expect(submitError(.handlers(many)) == .invalidField("ClientRequest.submit.operations[0].work.handlers.calls",
                                                               problem: "holds 1025 entries; at most 1024 are allowed"))
        #expect(submitError(.handlers(Array(many.dropLast()))) == nil)

        let half = [UInt8](repeating: 7, count: Limits.maxHandlerCallPayloadBytes / 2)
        let heavy = [HandlerCall("a", payload: half), HandlerCall("b", payload: half), HandlerCall("c", payload: [1])]
        #expect(submitError(.handlers(heavy))?.field == "ClientRequest.submit.operations[0].work.handlers.calls[2].payload")
        #expect(submitError(.handlers(Array(heavy.dropLast()))) == nil)
        #expect(submitError(.handlers([HandlerCall(String(repeating: "n", count: Limits.maxNameBytes + 1))]))?.field
            == "ClientRequest.submit.operations[0].work.handlers.calls[0].name")
    }

    @Test func aDispatchNeedsAtLeastOneCallEachWithAHandlerName() {
        func dispatchError(_ work: Work) -> WireError? {
            var dispatch = Samples.dispatch
            dispatch.work = Opq_V1_Work(work)
            return decodeError(Opq_V1_CoordinatorToWorker.orders([.dispatch(dispatch)]))
        }
        let path = "CoordinatorToWorker.orders.items[0].dispatch.work.handlers"
        #expect(dispatchError(.handlers([])) == .invalidField(path + ".calls", problem: "must not be empty"))
        #expect(dispatchError(.handlers([HandlerCall("ok"), HandlerCall("")]))?.field == path + ".calls[1].name")
    }

    @Test func theCoreRefusesEmptyListsAndNamelessCallsNamingTheOperationAndTheCall() throws {
        var scheduler = Scheduler()
        #expect(throws: SubmissionError.invalidField(index: 0, name: "blocks", field: "handlers", problem: "must hold at least one handler call")) {
            try scheduler.submit(Submission([OperationSpec(name: "blocks", work: .handlers([]))]), at: 0)
        }
        #expect(throws: SubmissionError.invalidField(index: 1, name: "b", field: "handlers[1]", problem: "must be a handler name")) {
            try scheduler.submit(Submission([OperationSpec(name: "a"), OperationSpec(name: "b", work: .handlers([HandlerCall("x"), HandlerCall("")]))]), at: 0)
        }
    }

    @Test func theCombinedResultIsAJSONArrayOfTheCallsResultsInOrder() throws {
        let results: [[UInt8]] = [Array("42".utf8), [], [0xff, 0x00, 0x10]]
        let combined = HandlerCall.combinedResult(results)
        #expect(String(decoding: combined, as: UTF8.self) == #"["42","",{"base64":"/wAQ"}]"#)
        #expect(HandlerCall.results(in: combined) == results)
        #expect(try JSONDecoder().decode([String].self, from: Data(HandlerCall.combinedResult([Array("a".utf8), Array("b".utf8)]))) == ["a", "b"])
        #expect(HandlerCall.results(in: Array("not json".utf8)) == nil)
    }
}
