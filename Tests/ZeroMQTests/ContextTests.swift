import Testing
import ZeroMQ

@Suite("Context lifecycle")
struct ContextTests {
    @Test("Closing a context with open sockets returns; the sockets then report termination")
    func closeWithOpenSockets() throws {
        let context = try Context()
        let (router, endpoint) = try boundRouter(context)
        let dealer = try connectedDealer(context, to: endpoint)
        try dealer.send([bytes("pending")])

        #expect(spawn { context.close() }.wait())
        #expect(context.isClosed)
        let error = #expect(throws: ZMQError.self) { try router.receiveMultipart() }
        #expect(error?.kind == .contextTerminated)
        #expect(throws: ZMQError.self) { try context.socket(.pair) }
        router.close()
        dealer.close()
        context.close()  // idempotent
    }

    @Test("A thread blocked in receive is woken with contextTerminated when the context closes")
    func blockedReceiverWakes() throws {
        let context = try Context()
        let ready = Signal()
        let outcome = Shared<ZMQError.Kind?>(nil)
        let done = spawn {
            do throws(ZMQError) {
                let socket = try context.socket(.pull)
                defer { socket.close() }
                try socket.bind("tcp://127.0.0.1:*")
                ready.fire()
                _ = try socket.receiveMultipart()
            } catch {
                outcome.value = error.kind
            }
        }
        #expect(ready.wait())
        context.close()
        #expect(done.wait())
        #expect(outcome.value == .contextTerminated)
    }

    @Test("Using a closed socket is a typed error; close is idempotent")
    func closedSocket() throws {
        let context = try Context()
        defer { context.close() }
        let socket = try context.socket(.dealer)
        socket.close()
        socket.close()
        #expect(socket.isClosed)
        let error = #expect(throws: ZMQError.self) { try socket.connect("tcp://127.0.0.1:1") }
        #expect(error?.kind == .socketClosed)
    }
}
