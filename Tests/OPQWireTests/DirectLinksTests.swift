import Testing
import OPQWire

/// The in-memory connections between a coordinator and the workers its loop hosts (``DirectLinks``): they
/// must behave like the ROUTER socket and DEALERs they stand in for — routing ids, order, fair turns,
/// what a closed or full link does.
@Suite struct DirectLinksTests {
    @Test func eachLinkHasItsOwnRoutingIdLikeAWorkersSocket() {
        let links = DirectLinks()
        let identities = (0..<50).map { _ in links.connect().identity }
        #expect(Set(identities).count == 50)
        #expect(identities.allSatisfy { $0.count == 16 && $0[0] >= 0x80 }, "ids starting below 0x80 look like libzmq's own")
    }

    @Test func messagesArriveInOrderWithTheSendersIdInFrontAndRepliesReachOnlyThatLink() {
        let links = DirectLinks()
        let a = links.connect(), b = links.connect()
        #expect(links.receive() == nil)
        #expect(a.send([[1], [2, 3]]))
        #expect(a.send([[4]]))
        #expect(links.pendingForCoordinator == 2)
        #expect(links.receive() == [a.identity, [1], [2, 3]])
        #expect(links.receive() == [a.identity, [4]])
        #expect(links.receive() == nil)
        #expect(links.pendingForCoordinator == 0)

        #expect(links.deliver([b.identity, [9], [8]]) == .delivered)
        #expect(links.deliver([b.identity, [7]]) == .delivered)
        #expect(!a.hasMessages && a.receive() == nil)
        #expect(b.hasMessages)
        #expect(b.receive() == [[9], [8]])
        #expect(b.receive() == [[7]])
        #expect(b.receive() == nil && !b.hasMessages)
    }

    @Test func linksTakeTurnsSoAFloodingWorkerDoesNotHoldTheOthersBack() {
        let links = DirectLinks()
        let flood = links.connect(), quiet = links.connect()
        for k in 0..<100 { #expect(flood.send([[UInt8(k)]])) }
        #expect(quiet.send([[200]]))
        let first = [links.receive(), links.receive()].compactMap { $0?.first }
        #expect(Set(first) == [flood.identity, quiet.identity], "the quiet link waited behind the flood")
        var rest = 0
        while let message = links.receive() {
            #expect(message[0] == flood.identity)
            rest += 1
        }
        #expect(rest == 99)
    }

    @Test func anIdThatIsNoLinksIsLeftToTheSocket() {
        let links = DirectLinks()
        _ = links.connect()
        #expect(links.deliver([[0x80, 1, 2]]) == .notALink)
        #expect(links.deliver([]) == .notALink)
    }

    @Test func aClosedLinkIsUnreachableButWhatItSentBeforeIsStillRead() {
        let links = DirectLinks()
        let link = links.connect()
        #expect(link.send([[1]]))
        #expect(links.deliver([link.identity, [5]]) == .delivered)
        #expect(links.isOpen(link.identity))
        link.close()
        #expect(!link.isOpen && !link.hasRoom && !links.isOpen(link.identity))
        #expect(!link.send([[2]]), "a closed link took a message")
        #expect(link.receive() == nil, "what the coordinator sent to a closed link is dropped, as by a closed socket")
        #expect(links.deliver([link.identity, [6]]) == .unreachable)
        #expect(links.receive() == [link.identity, [1]])
        // Its last message read, the link is forgotten: its id is no link's any more.
        #expect(links.deliver([link.identity, [7]]) == .notALink)
        #expect(links.isEmpty)
        link.close()  // twice is harmless
    }

    @Test func aLinkClosedWithNothingUnreadIsForgottenAtOnce() {
        let links = DirectLinks()
        let kept = links.connect(), closed = links.connect()
        closed.close()
        #expect(links.deliver([closed.identity, [1]]) == .notALink)
        #expect(!links.isEmpty)
        #expect(kept.send([[3]]))
        #expect(links.receive() == [kept.identity, [3]])
    }

    @Test func aFullLinkRefusesInBothDirections() {
        let links = DirectLinks()
        let link = links.connect()
        for k in 0..<DirectLink.capacity { #expect(link.send([[UInt8(k & 0xFF)]])) }
        #expect(!link.hasRoom)
        #expect(!link.send([[0]]), "a link past its capacity took a message")
        _ = links.receive()
        #expect(link.hasRoom)
        #expect(link.send([[1]]))

        for _ in 0..<DirectLink.capacity { #expect(links.deliver([link.identity, [2]]) == .delivered) }
        #expect(links.deliver([link.identity, [3]]) == .full)
        #expect(link.receive() == [[2]])
        #expect(links.deliver([link.identity, [4]]) == .delivered)
        #expect(links.pendingForCoordinator == DirectLink.capacity)
    }

    @Test func aLongQueueStaysInOrderAcrossItsCompactions() {
        let links = DirectLinks()
        let link = links.connect()
        var expected: [UInt8] = []
        var next: UInt16 = 0
        // Sends outpace reads, so the queue's read head moves far before it empties.
        for round in 0..<30 {
            for _ in 0..<60 {
                #expect(link.send([[UInt8(next & 0xFF), UInt8(next >> 8)]]))
                expected.append(UInt8(next & 0xFF))
                next += 1
            }
            for _ in 0..<(round.isMultiple(of: 7) ? 70 : 50) {
                guard let message = links.receive() else { break }
                #expect(message[1][0] == expected.removeFirst())
            }
        }
        while let message = links.receive() { #expect(message[1][0] == expected.removeFirst()) }
        #expect(expected.isEmpty)
    }
}
