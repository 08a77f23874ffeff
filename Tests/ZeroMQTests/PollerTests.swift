#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import ZeroMQ

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

    /// A socket's descriptor is readable whenever its events may have changed — also for what nobody asked
    /// for (a peer connecting: its pipe is attached, and the ROUTER's writable state changes). A wait for
    /// messages reads the events again then, finds none, and waits on until its timeout.
    @Test("A wait woken by a socket change it did not ask for waits on to its timeout")
    func spuriousWakeWaitsOn() throws {
        let context = try Context()
        defer { context.close() }
        let (router, endpoint) = try boundRouter(context)
        defer { router.close() }
        var poller = Poller()
        let item = try poller.add(router)
        let connected = Shared<Bool>(false)
        let release = Signal()
        let peer = spawn {
            // Connected, handshaken, then silent until the wait is over: only the router's own state changes.
            if let dealer = try? connectedDealer(context, to: endpoint, id: "quiet") {
                connected.value = true
                _ = release.wait()
                dealer.close()
            }
        }
        let start = ContinuousClock.now
        #expect(try poller.poll(timeout: 400) == 0)
        let waited = ContinuousClock.now - start
        #expect(!poller.isReadable(item))
        #expect(waited >= .milliseconds(390), "returned after \(waited) of its 400 ms")
        #expect(connected.value)
        release.fire()
        #expect(peer.wait())
    }

    /// A socket found holding nothing is quiet until it is used: a poll then waits on its descriptor alone
    /// (which becomes readable when its events may have changed) without reading its events first.
    @Test("A quiet socket's events are not read again before a wait until it is used")
    func quietSocketIsNotReadAgain() throws {
        let context = try Context()
        defer { context.close() }
        let (router, _) = try boundRouter(context)  // no peer: nothing can change it
        defer { router.close() }
        var poller = Poller()
        let item = try poller.add(router)
        #expect(try poller.poll(timeout: 0) == 0)
        #expect(poller.socketReads == 1)
        #expect(try poller.poll(timeout: 20) == 0 && !poller.isReadable(item))
        #expect(poller.socketReads == 1, "quiet: waited on its descriptor only")
        _ = try router.events  // a use: it may have taken in what its descriptor announced
        #expect(try poller.poll(timeout: 0) == 0)
        #expect(poller.socketReads == 2)
        poller.setEvents([.readable, .writable], at: item)  // other events asked for: read again
        _ = try poller.poll(timeout: 0)
        #expect(poller.socketReads == 3)
    }

    /// The reason a use ends the quiet: the use takes in the command that announced a message (the
    /// descriptor's wake-up is spent), so only reading the events finds the message.
    @Test("A message a socket took in while used after a quiet poll ends the next wait at once")
    func messageTakenInByAUseIsNotMissed() throws {
        let context = try Context()
        defer { context.close() }
        let (router, endpoint) = try boundRouter(context)
        defer { router.close() }
        let dealer = try connectedDealer(context, to: endpoint, id: "d")
        defer { dealer.close() }
        var poller = Poller()
        let item = try poller.add(router)
        _ = try poller.poll(timeout: 0)
        #expect(!poller.isReadable(item))
        try dealer.send([bytes("ping")])
        // Uses of the router (not polls of this poller) until it holds the message: the announcement is taken
        // in by them. Between uses, wait on the router's own descriptor, which fires when there is news.
        let descriptor = try router.fileDescriptor
        let deadline = ContinuousClock.now + .seconds(10)
        while try !router.events.contains(.readable), ContinuousClock.now < deadline {
            var item = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&item, 1, Poller.milliseconds(until: deadline))
        }
        #expect(try router.events.contains(.readable), "the message reached the router")
        let start = ContinuousClock.now
        #expect(try poller.poll(timeout: 5000) == 1)
        #expect(poller.isReadable(item))
        #expect(ContinuousClock.now - start < .seconds(2), "found at once, not after the wait")
        #expect(try receive(router)?.last == bytes("ping"))
    }

    @Test("A message sent during a wait ends it; a descriptor ready by then is reported with it")
    func messageEndsWait() throws {
        let context = try Context()
        defer { context.close() }
        let (router, endpoint) = try boundRouter(context)
        defer { router.close() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var poller = Poller()
        let routerItem = try poller.add(router)
        let pipeItem = poller.add(fileDescriptor: fds[0])
        let writeEnd = fds[1]
        let release = Signal()
        let sender = spawn {
            guard let dealer = try? connectedDealer(context, to: endpoint, id: "sender") else { return }
            var byte: UInt8 = 1
            _ = write(writeEnd, &byte, 1)
            try? dealer.send([bytes("hello")])
            // Open until the message is in: a socket closed at once (no linger) may drop what it has not sent.
            _ = release.wait()
            dealer.close()
        }
        defer {
            release.fire()
            #expect(sender.wait())
        }
        // The pipe's byte comes first; the message at once or after the wait that byte ends.
        var sawMessage = false
        let deadline = ContinuousClock.now + .seconds(10)
        while !sawMessage && ContinuousClock.now < deadline {
            #expect(try poller.poll(timeout: 5000) >= 1)
            #expect(poller.isReadable(pipeItem))
            sawMessage = poller.isReadable(routerItem)
        }
        #expect(sawMessage)
        #expect(try receive(router)?.last == bytes("hello"))
    }
}
