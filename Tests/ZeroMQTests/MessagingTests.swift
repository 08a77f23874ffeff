import Testing
import ZeroMQ

@Suite("Multipart messaging")
struct MessagingTests {
    @Test("ROUTER/DEALER round trip keeps identity, empty and 1 MB frames")
    func routerDealerRoundTrip() throws {
        let context = try Context()
        defer { context.close() }
        let (router, endpoint) = try boundRouter(context)
        let dealer = try connectedDealer(context, to: endpoint, id: "d1")
        defer { dealer.close(); router.close() }

        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(try dealer.send([[], bytes("hello"), big]) == .sent)

        let request = try #require(try receive(router))
        #expect(request.count == 4)
        #expect(request[0] == bytes("d1"))
        #expect(request[1].isEmpty)
        #expect(request[2] == bytes("hello"))
        #expect(request[3] == big)

        #expect(try router.send([request[0], [], bytes("world"), big.reversed()]) == .sent)
        let reply = try #require(try receive(dealer))
        #expect(reply == [[], bytes("world"), big.reversed()])
    }

    @Test("Single frames with sendMore form one message; receiveFrame reports more")
    func singleFrames() throws {
        let context = try Context()
        defer { context.close() }
        let (router, endpoint) = try boundRouter(context)
        let dealer = try connectedDealer(context, to: endpoint, id: "d1")
        defer { dealer.close(); router.close() }

        try dealer.send(frame: bytes("a"), flags: .sendMore)
        try dealer.send(frame: bytes("b"))
        #expect(try receive(router) == [bytes("d1"), bytes("a"), bytes("b")])

        try router.send([bytes("d1"), bytes("x"), bytes("y")])
        var poller = Poller()
        let item = try poller.add(dealer)
        #expect(try poller.poll(timeout: 5000) == 1 && poller.isReadable(item))
        let first = try #require(try dealer.receiveFrame())
        #expect(first.frame == bytes("x") && first.more)
        let second = try #require(try dealer.receiveFrame(flags: .dontWait))
        #expect(second.frame == bytes("y") && !second.more)
    }

    @Test("Non-blocking send without peers would block; non-blocking receive returns nil")
    func nonBlocking() throws {
        let context = try Context()
        defer { context.close() }
        let dealer = try context.socket(.dealer)
        defer { dealer.close() }
        #expect(try dealer.send([bytes("x")], flags: .dontWait) == .wouldBlock)
        #expect(try dealer.receiveMultipart(flags: .dontWait) == nil)
        #expect(try dealer.events == .init())
    }

    @Test("ROUTER_MANDATORY: sending to an unknown routing id is hostUnreachable, not an error")
    func routerMandatory() throws {
        let context = try Context()
        defer { context.close() }
        let (router, _) = try boundRouter(context) { try $0.set(.routerMandatory, true) }
        defer { router.close() }
        #expect(try router.send([bytes("nobody"), bytes("x")], flags: .dontWait) == .hostUnreachable)

        let lax = try context.socket(.router)
        defer { lax.close() }
        #expect(try lax.send([bytes("nobody"), bytes("x")], flags: .dontWait) == .sent)
    }
}
