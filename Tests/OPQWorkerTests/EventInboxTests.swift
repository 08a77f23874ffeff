import Foundation
import OPQCore
import Testing
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Event inbox")
struct EventInboxTests {
    private let key = AttemptKey(OperationID(7), attempt: 1)

    /// Whether the inbox's pipe holds a wake-up byte (it is never read here).
    private func pipeReadable(_ inbox: EventInbox) -> Bool {
        var item = pollfd(fd: inbox.readDescriptor, events: Int16(POLLIN), revents: 0)
        return poll(&item, 1, 0) == 1
    }

    @Test("what the socket thread posts itself writes no wake-up byte; it is pending until taken")
    func socketThreadPostsWithoutWakeUp() throws {
        let inbox = EventInbox()
        try #require(inbox.failure == nil)
        inbox.adoptCurrentThread()
        inbox.post(.started(key, at: Date()))
        #expect(inbox.hasPending)
        #expect(!pipeReadable(inbox))
        let taken = inbox.take(pipeReadable: false)
        #expect(taken.map(\.key) == [key])
        #expect(!inbox.hasPending)
    }

    @Test("another thread's post wakes the socket thread with one byte, and a take empties the pipe")
    func otherThreadPostWakes() throws {
        let inbox = EventInbox()
        try #require(inbox.failure == nil)
        inbox.adoptCurrentThread()
        let posted = DispatchSemaphore(value: 0)
        let key = key
        let thread = Thread {
            inbox.post(.started(key, at: Date()))
            inbox.post(.progress(key, fraction: 0.5, message: nil))
            posted.signal()
        }
        thread.start()
        try #require(posted.wait(timeout: .now() + 30) == .success)
        #expect(pipeReadable(inbox))
        // The poll's answer is not needed: a claimed wake-up says the pipe holds a byte.
        #expect(inbox.take(pipeReadable: false).count == 2)
        #expect(!pipeReadable(inbox))
        #expect(!inbox.hasPending)
    }

    @Test("a worker without an adopted thread wakes for every first post, as before")
    func withoutOwnerEveryPostWakes() throws {
        let inbox = EventInbox()
        try #require(inbox.failure == nil)
        inbox.post(.started(key, at: Date()))
        #expect(pipeReadable(inbox))
        #expect(inbox.take().count == 1)
        #expect(!pipeReadable(inbox))
    }
}
