#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
import ZeroMQ

@Suite("Poller")
struct PollerTests {
    @Test("A raw pipe descriptor is reported readable once written to")
    func rawFileDescriptor() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }

        var poller = Poller()
        let item = poller.add(fileDescriptor: fds[0])
        #expect(try poller.poll(timeout: 0) == 0)
        #expect(!poller.isReadable(item))

        var byte: UInt8 = 1
        #expect(write(fds[1], &byte, 1) == 1)
        #expect(try poller.poll(timeout: 5000) == 1)
        #expect(poller.isReadable(item))
    }

    @Test("Sockets and descriptors share one poll set; interest can change between turns")
    func mixedItems() throws {
        let context = try Context()
        defer { context.close() }
        let (router, endpoint) = try boundRouter(context)
        let dealer = try connectedDealer(context, to: endpoint, id: "d")
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }

        var poller = Poller()
        let pipeItem = poller.add(fileDescriptor: fds[0])
        let routerItem = try poller.add(router)
        try dealer.send([bytes("ping")])
        #expect(try poller.poll(timeout: 5000) == 1)
        #expect(poller.isReadable(routerItem) && !poller.isReadable(pipeItem))

        poller.setEvents(.writable, at: routerItem)
        #expect(try poller.poll(timeout: 5000) == 1)
        #expect(poller.readyEvents(at: routerItem) == .writable)

        poller.remove(at: pipeItem)
        dealer.close()
        router.close()
        let error = #expect(throws: ZMQError.self) { try poller.poll(timeout: 0) }
        #expect(error?.kind == .socketClosed)
    }
}
