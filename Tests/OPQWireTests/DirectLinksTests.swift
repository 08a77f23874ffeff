import OPQCore
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

    /// A message passed as it is arrives as it is; a side that reads frames gets exactly the frames a socket
    /// would have carried (``Frames/encode(_:raw:to:)``).
    @Test func aMessagePassedAsItIsArrivesAsItIsOrEncodedForAFramesReader() throws {
        let links = DirectLinks()
        let a = links.connect()
        var report = Opq_V1_WorkerMessage.reports([.started(OperationID(7), attempt: 2)])
        report.reports.sequence = 3
        #expect(a.send(report, raw: [[1, 2]]))
        #expect(links.pendingForCoordinator == 1)
        let next = try #require(links.receiveMessage())
        #expect(next.identity == a.identity)
        guard case let .message(received, raw) = next.message else { Issue.record("arrived as frames"); return }
        #expect(received == report && raw == [[1, 2]])
        #expect(a.send(report, raw: [[1, 2]]))
        #expect(links.receive() == (try Frames.encode(report, raw: [[1, 2]], to: a.identity)))
        #expect(links.pendingForCoordinator == 0)

        var orders = Opq_V1_CoordinatorToWorker()
        orders.reportsDurable = 3
        orders.heartbeat = Opq_V1_Heartbeat()
        #expect(links.deliver(orders, to: a.identity) == .delivered)
        guard case let .message(delivered, _)? = a.receiveMessage() else { Issue.record("not delivered as it is"); return }
        #expect(delivered == orders)
        #expect(links.deliver(orders, to: a.identity) == .delivered)
        #expect(a.receive() == (try Frames.encode(orders)))
        #expect(links.deliver(orders, to: [0x80, 1]) == .notALink)
        a.close()
        #expect(links.deliver(orders, to: a.identity) == links.deliver([a.identity, [1]]), "a closed link, either way")
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

    /// Seeded random workloads against a model of what sockets promise: per link, messages arrive in the
    /// order sent, none lost or doubled, both ways; a closed link takes nothing and gets nothing, but what
    /// it sent before closing is still read; a full direction refuses; ``DirectLinks/pendingForCoordinator``
    /// counts what waits; a waiting link is read before any other link is read twice (fair turns).
    /// Checked after every step.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomWorkloadsKeepEveryLinksOrderAndLoseNothing(seed: UInt64) {
        struct Model {
            var toCoordinator: [UInt64] = []
            var toWorker: [UInt64] = []
            var isOpen = true
            /// Turns of `receive` that gave another link's message while this one had one waiting.
            var passedOver = 0
        }
        var random = SplitMix64(seed: seed)
        let links = DirectLinks()
        var ends: [DirectLink] = []
        var model: [[UInt8]: Model] = [:]
        var next: UInt64 = 0
        let capacity = DirectLink.capacity
        func message(_ n: UInt64) -> [[UInt8]] { [withUnsafeBytes(of: n.littleEndian, Array.init)] }
        func number(_ frames: [[UInt8]]) -> UInt64 { frames[0].withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } }

        for step in 0..<4_000 {
            let roll = random.next() % 100
            if ends.isEmpty || roll < 3 {
                let link = links.connect()
                #expect(model[link.identity] == nil, "a routing id was given twice")
                ends.append(link)
                model[link.identity] = Model()
            } else if roll < 40 {
                // A worker sends a burst (sometimes past the capacity).
                let link = ends[Int(random.next() % UInt64(ends.count))]
                for _ in 0..<(1 + Int(random.next() % (roll < 8 ? 300 : 4))) {
                    next += 1
                    let expected = model[link.identity]!.isOpen && model[link.identity]!.toCoordinator.count < capacity
                    #expect(link.send(message(next)) == expected, "step \(step): send")
                    if expected { model[link.identity]!.toCoordinator.append(next) }
                }
            } else if roll < 65 {
                // The coordinator reads some.
                for _ in 0..<(1 + Int(random.next() % 50)) {
                    let waiting = model.filter { !$0.value.toCoordinator.isEmpty }.map(\.key)
                    guard let frames = links.receive() else {
                        #expect(waiting.isEmpty, "step \(step): nothing read with \(waiting.count) links waiting")
                        break
                    }
                    let identity = frames[0]
                    #expect(model[identity]?.toCoordinator.first == number(Array(frames.dropFirst())), "step \(step): out of order")
                    model[identity]?.toCoordinator.removeFirst()
                    model[identity]?.passedOver = 0
                    for other in waiting where other != identity {
                        model[other]!.passedOver += 1
                        // Turns: between two reads of a waiting link every other link is read at most once.
                        #expect(model[other]!.passedOver <= ends.count - 1, "step \(step): a link waits past its turn")
                    }
                }
            } else if roll < 85 {
                // The coordinator sends to a link (or to an id that is no link's).
                let unknown = roll < 67
                let identity = unknown ? [0x80] + (0..<15).map { _ in UInt8.random(in: 0...255, using: &random) }
                                       : ends[Int(random.next() % UInt64(ends.count))].identity
                next += 1
                let result = links.deliver([identity] + message(next))
                if let entry = model[identity] {
                    let known = entry.isOpen || !entry.toCoordinator.isEmpty
                    let expected: DirectLinks.Delivery = !known ? .notALink : !entry.isOpen ? .unreachable
                        : entry.toWorker.count >= capacity ? .full : .delivered
                    #expect(result == expected, "step \(step): deliver")
                    if expected == .delivered { model[identity]!.toWorker.append(next) }
                } else {
                    #expect(result == .notALink)
                }
            } else if roll < 97 {
                // A worker reads what waits for it.
                let link = ends[Int(random.next() % UInt64(ends.count))]
                while let frames = link.receive() {
                    #expect(model[link.identity]!.toWorker.first == number(frames), "step \(step): out of order to the worker")
                    model[link.identity]!.toWorker.removeFirst()
                }
                #expect(model[link.identity]!.toWorker.isEmpty && !link.hasMessages)
            } else {
                let link = ends[Int(random.next() % UInt64(ends.count))]
                link.close()
                model[link.identity]!.isOpen = false
                model[link.identity]!.toWorker.removeAll()
            }
            // Invariants after every step.
            #expect(links.pendingForCoordinator == model.values.reduce(0) { $0 + $1.toCoordinator.count }, "step \(step): pending")
            for link in ends {
                let entry = model[link.identity]!
                #expect(links.isOpen(link.identity) == entry.isOpen)
                #expect(link.hasMessages == !entry.toWorker.isEmpty)
                #expect(link.hasRoom == (entry.isOpen && entry.toCoordinator.count < capacity))
            }
        }
        // Everything sent is read in the end, in order.
        while let frames = links.receive() {
            #expect(model[frames[0]]?.toCoordinator.first == number(Array(frames.dropFirst())))
            model[frames[0]]?.toCoordinator.removeFirst()
        }
        #expect(model.values.allSatisfy { $0.toCoordinator.isEmpty })
        #expect(links.pendingForCoordinator == 0)
    }
}
