import Foundation
import OPQCore
import Testing
@testable import OPQWorker
#if canImport(Glibc)
import Glibc
#endif

@Suite("Several commands in one operation")
struct MultipleCommandTests {
    @Test("all succeed → succeeded, outputs joined in command order")
    func allSucceed() async throws {
        let completion = try #require(await runCommands([.shell("echo one"), .shell("echo two")]))
        #expect(completion.report == .succeeded)
        #expect(completion.stdoutText == "one\ntwo\n")
    }

    @Test("one fails → failed with its exit code")
    func oneFails() async throws {
        let completion = try #require(await runCommands([.shell("exit 0"), .shell("exit 4"), .shell("true")]))
        #expect(completion.report == AttemptReport(.failed, reason: .exitStatus, exitCode: 4))
        #expect(completion.message == "command 2 of 3: exit status 4")
    }

    @Test("one cannot be spawned → failed, the others still run")
    func oneCannotSpawn() async throws {
        let completion = try #require(await runCommands([.shell("echo ran"), Command(["opq-no-such-program-xyz"])]))
        #expect(completion.report.reason == .error)
        #expect(completion.stdoutText == "ran\n")
    }

    @Test("they run at once: two commands that each wait for the other's file")
    func concurrent() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = directory.appendingPathComponent("a").path
        let b = directory.appendingPathComponent("b").path
        let completion = try #require(await runCommands([
            .shell("touch '\(a)'; while [ ! -e '\(b)' ]; do sleep 0.01; done"),
            .shell("touch '\(b)'; while [ ! -e '\(a)' ]; do sleep 0.01; done"),
        ], timeout: 10))
        #expect(completion.report == .succeeded)
    }

    @Test("cancel kills every command's group")
    func cancelKillsAll() async throws {
        let key = AttemptKey(OperationID(9), attempt: 1)
        let operation = CommandOperation(key: key, commands: [Command(["sleep", "1000"]), Command(["sleep", "1000"])])
        let groups = SpawnedGroups()
        operation.onSpawned = groups.observer
        defer { groups.killAll() }
        let (log, _) = start(operation)
        #expect(await log.started(key))
        operation.cancel()
        let completion = try #require(await log.completion(key, timeout: 30))
        #expect(completion.report.status == .cancelled)
        // A cancel that lands between the two spawns stops the second before it starts; whatever
        // was spawned must be gone.
        #expect((1...2).contains(groups.all.count))
        for pgid in groups.all { #expect(!groupIsAlive(pgid)) }
    }
}
