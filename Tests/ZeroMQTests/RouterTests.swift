import Testing
import ZeroMQ

@Suite("ROUTER peer handling")
struct RouterTests {
    @Test("ROUTER_HANDOVER: a reconnecting DEALER with the same routing id takes over")
    func handover() throws {
        let context = try Context()
        defer { context.close() }
        let (router, endpoint) = try boundRouter(context) {
            try $0.set(.routerHandover, true)
            try $0.set(.routerMandatory, true)
        }
        defer { router.close() }

        let first = try connectedDealer(context, to: endpoint, id: "w1")
        try first.send([bytes("from first")])
        #expect(try receive(router) == [bytes("w1"), bytes("from first")])
        first.close()

        let second = try connectedDealer(context, to: endpoint, id: "w1")
        defer { second.close() }
        try second.send([bytes("from second")])
        #expect(try receive(router) == [bytes("w1"), bytes("from second")])

        #expect(try router.send([bytes("w1"), bytes("reply")], flags: .dontWait) == .sent)
        #expect(try receive(second) == [bytes("reply")])
    }

    @Test("MAXMSGSIZE drops an oversized peer and keeps serving the others")
    func maxMessageSize() throws {
        let context = try Context()
        defer { context.close() }
        let (router, endpoint) = try boundRouter(context) { try $0.set(.maxMessageSize, 1000) }
        defer { router.close() }
        #expect(try router.get(.maxMessageSize) == 1000)

        let offender = try connectedDealer(context, to: endpoint, id: "big") {
            try $0.set(.reconnectInterval, -1)  // stay away once dropped
        }
        let good = try connectedDealer(context, to: endpoint, id: "good")
        defer { offender.close(); good.close() }

        try offender.send([[UInt8](repeating: 7, count: 2000)])
        try good.send([bytes("small")])
        #expect(try receive(router) == [bytes("good"), bytes("small")])
        #expect(try router.send([bytes("good"), bytes("ok")]) == .sent)
        #expect(try receive(good) == [bytes("ok")])
        // The oversized message never arrives (a bounded negative check).
        #expect(try receive(router, within: .milliseconds(300)) == nil)
    }
}
