import OPQSpawn
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// ``ReadinessSet``'s two ways of watching a descriptor: level-triggered (reported while ready, removed
/// before it is closed) and once (``ReadinessSet/addOnce(_:token:)``: one event, then disarmed, so the
/// child monitor closes a pidfd after its exit without removing it first).
@Suite("ReadinessSet: level-triggered and once")
struct ReadinessSetTests {
    /// A pipe whose read end is readable (one byte in it); both ends are the caller's to close.
    private static func readablePipe() throws -> (read: Int32, write: Int32) {
        let pipe = try ChildSpawn.makePipe().get()
        var byte: UInt8 = 1
        #expect(write(pipe.write, &byte, 1) == 1)
        return pipe
    }

    private static func tokens(_ set: ReadinessSet) -> [UInt64] {
        var events: [ReadinessSet.Event] = []
        let count = set.wait(timeout: 0, into: &events)
        return events.prefix(count).map(\.token)
    }

    @Test("A level-triggered descriptor is reported at every wait while it is ready; a once-descriptor at the first only")
    func reportedOnceOrAlways() throws {
        let set = try ReadinessSet()
        let level = try Self.readablePipe(), once = try Self.readablePipe()
        defer { for fd in [level.read, level.write, once.read, once.write] { close(fd) } }
        #expect(set.add(level.read, token: 1) == 0)
        #expect(set.addOnce(once.read, token: 2) == 0)
        #expect(Set(Self.tokens(set)) == [1, 2])
        #expect(Self.tokens(set) == [1])  // both still hold their byte
        #expect(Self.tokens(set) == [1])
        set.remove(level.read)
        #expect(Self.tokens(set) == [])
        // Armed again, it is reported once more while it is ready, and not when it no longer is.
        #expect(set.rearm(once.read, token: 2) == 0)
        #expect(Self.tokens(set) == [2])
        #expect(Self.tokens(set) == [])
        var byte: UInt8 = 0
        #expect(read(once.read, &byte, 1) == 1)
        #expect(set.rearm(once.read, token: 2) == 0)
        #expect(Self.tokens(set) == [])
    }

    /// A child between vfork and exec holds a copy of every descriptor for a moment: the pipe (or pidfd)
    /// stays open after this process closed its own, and a watch left in the set would go on reporting.
    @Test("A once-descriptor closed without removal stays silent even while a copy keeps it open; a level-triggered one does not")
    func closedWithoutRemoval() throws {
        let set = try ReadinessSet()
        let level = try Self.readablePipe(), once = try Self.readablePipe()
        let levelCopy = dup(level.read), onceCopy = dup(once.read)
        defer { for fd in [level.write, once.write, levelCopy, onceCopy] { close(fd) } }
        #expect(set.add(level.read, token: 1) == 0)
        #expect(set.addOnce(once.read, token: 2) == 0)
        #expect(Set(Self.tokens(set)) == [1, 2])
        close(once.read)
        close(level.read)
        // The level-triggered watch outlives its descriptor while the copy is open (why it must be removed
        // first); the once-watch fired already and says nothing more.
        #expect(Self.tokens(set) == [1])
    }
}
