import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing

/// A tmpfs of a few megabytes mounted on `path`, to fill for real. Mounting needs root (CI runs the
/// tests as root). Unmounted — lazily, so the processes still using it cannot keep it — by ``unmount()``
/// or when deinitialised, so a failing test leaves no mount behind.
final class SmallFileSystem {
    let path: String
    private var mounted = false

    init(megabytes: Int, at path: String) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard mount("tmpfs", path, "tmpfs", 0, "size=\(megabytes)m,mode=0700") == 0 else {
            throw FileSystemError(description: "cannot mount a tmpfs on \(path) (the disk-full tests need root): \(String(cString: strerror(errno)))")
        }
        mounted = true
    }

    /// Writes zeros to a file named `name` until the file system is full; returns the file's path.
    func fill(_ name: String = "filler") throws -> String {
        let filler = path + "/" + name
        let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileSystemError(description: "cannot create \(filler): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                guard errno == ENOSPC else { throw FileSystemError(description: "cannot fill \(filler): \(String(cString: strerror(errno)))") }
                return filler
            }
        }
    }

    /// Bytes still free.
    var freeBytes: UInt64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    func unmount() {
        guard mounted else { return }
        mounted = false
        umount2(path, Int32(MNT_DETACH))
    }

    deinit { unmount() }
}

struct FileSystemError: Error, CustomStringConvertible {
    let description: String
}

/// SEMANTICS §10 on a full disk, for real: the coordinator's state directory is a small tmpfs that the
/// test fills. Changes are refused with a clear error (exit status 3 from `opq`), reads and running work go
/// on, finishes are kept, and everything resumes by itself once there is room.
@Suite(.serialized) struct DiskFullTests {
    /// Seconds recovered attempts wait for their workers (see `DurabilityTests.grace`).
    static let grace = ["--recovery-grace", "30"]

    /// A coordinator whose state directory is a 16 MB tmpfs, one worker of `slots` slots, a client, and
    /// an operation `name` that says when it starts, runs until the returned release file exists, then
    /// appends its name to the returned evidence file. Stop with `disk.unmount()`, then `cluster.stop()`.
    static func start(slots: Int, holding name: String) throws
        -> (cluster: TestCluster, disk: SmallFileSystem, client: CoordinatorConnection, held: OperationSpec, started: Signal, release: String, file: String) {
        let cluster = try TestCluster()
        let disk = try SmallFileSystem(megabytes: 16, at: cluster.stateDirectory)
        try cluster.startCoordinator(grace)
        try cluster.startWorker("w1", slots: slots)
        let started = try Signal(cluster.path("started"))
        let release = cluster.path("release")
        let file = cluster.path("ran")
        let held = OperationSpec(name: name, work: .command(Command(["/bin/sh", "-c",
            "echo \"$3\" > \"$1\"; while [ ! -e \"$2\" ]; do sleep 0.05; done; echo \"$3\" >> \"$0\"", file, started.path, release, name])))
        return (cluster, disk, try CoordinatorConnection(endpoint: cluster.clientsEndpoint), held, started, release, file)
    }

    /// Whether `error` is the coordinator's refusal for a full state disk.
    static func isDiskFullRefusal(_ error: Error, cluster: TestCluster) -> Bool {
        guard case .refused(let refusal) = error as? ClientError else { return false }
        return refusal.code == .internal
            && refusal.message == "the coordinator's state disk is full (\(cluster.stateDirectory)/journal.sqlite): free space; nothing was accepted"
    }

    @Test func aFullStateDiskRefusesChangesServesReadsKeepsFinishesAndResumesWhenSpaceReturns() throws {
        let (cluster, disk, connection, hold, started, release, file) = try Self.start(slots: 2, holding: "hold")
        defer { cluster.stop() }
        defer { disk.unmount() }
        var client = connection
        let after = OperationSpec(name: "after", work: Evidence.append("after", to: file), dependencies: [.name("hold")])
        let first = try client.submit(Submission([hold, after]))
        #expect(started.wait(within: 30) != nil, "hold did not start\n\(cluster.logs)")

        let filler = try disk.fill()
        #expect(disk.freeBytes == 0)
        // Changes are refused, saying why; nothing of them is accepted.
        #expect { try client.submit(Submission([OperationSpec(name: "refused", work: Evidence.append("refused", to: file))])) }
            throws: { Self.isDiskFullRefusal($0, cluster: cluster) }
        #expect { try client.request { $0.cancel.job = first.job } } throws: { Self.isDiskFullRefusal($0, cluster: cluster) }
        let cli = try ChildProcess("opq", ["add", "--coordinator", cluster.clientsEndpoint, "--", "/bin/true"],
                                   name: "opq-add", logDirectory: cluster.directory)
        let status = try #require(cli.waitForExit(within: 30), "opq add did not return")
        #expect((status >> 8) & 0xFF == 3, "\(cli.output)")
        #expect(cli.output.contains("opq: the coordinator's state disk is full ("), "\(cli.output)")

        // Reads are served; running work finishes (kept in memory, its worker keeps the report).
        #expect(try client.request { $0.getJob.job = first.job }.reply.job.counts.executing == 1)
        #expect(FileManager.default.createFile(atPath: release, contents: nil))
        let waited = try client.request(timeout: 40) { $0.wait.operation = first.operations[0]; $0.wait.timeoutSeconds = 30 }.reply.waited
        #expect(!waited.timedOut, "hold did not finish\n\(cluster.logs)")
        #expect(try client.operation(OperationID(first.operations[0])).info.outcome == .succeeded)
        #expect { try client.submit(Submission([OperationSpec(name: "refused")])) } throws: { Self.isDiskFullRefusal($0, cluster: cluster) }

        // Space returns: the next change is accepted, without a restart, and the held work goes on.
        try FileManager.default.removeItem(atPath: filler)
        let second = try client.submit(Submission([OperationSpec(name: "later", work: Evidence.append("later", to: file))]))
        #expect(second.job == first.job + 1, "a refused submission took a job id")
        #expect(try client.finish(first.job, within: 60, cluster: cluster).counts.succeeded == 2)
        #expect(try client.finish(second.job, within: 60, cluster: cluster).counts.succeeded == 1)

        // Nothing acknowledged is lost across a restart, nothing ran twice, nothing refused ran.
        client = try DurabilityTests.restart(cluster)
        #expect(try client.request { $0.getJob.job = first.job }.reply.job.counts.succeeded == 2)
        #expect(try client.request { $0.getJob.job = second.job }.reply.job.counts.succeeded == 1)
        #expect(throws: ClientError.self) { try client.request { $0.getJob.job = second.job + 1 } }
        #expect(Evidence.lines(file).sorted() == ["after", "hold", "later"], "\(Evidence.lines(file))")
        let log = (try? String(contentsOfFile: cluster.path("coordinator.log"), encoding: .utf8)) ?? ""  // both runs
        #expect(log.contains("journal disk full") && log.contains("journal writable again"), "\(cluster.logs)")
    }

    @Test func aCoordinatorStartingOnAFullDiskSaysSoAndLeavesNoEmptyJournalBehind() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        let disk = try SmallFileSystem(megabytes: 4, at: cluster.stateDirectory)
        defer { disk.unmount() }
        let filler = try disk.fill()
        try cluster.startCoordinator()
        let coordinator = try #require(cluster.coordinator)
        let status = try #require(coordinator.waitForExit(within: 30), "it started without a journal\n\(coordinator.output)")
        #expect((status >> 8) & 0xFF == 2)
        #expect(coordinator.output.contains("the coordinator's state disk is full (\(cluster.stateDirectory)/journal.sqlite)"), "\(coordinator.output)")
        #expect(!FileManager.default.fileExists(atPath: cluster.stateDirectory + "/journal.sqlite"))
        // With room again it starts, fresh.
        try FileManager.default.removeItem(atPath: filler)
        try cluster.startCoordinator()
        let client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        #expect(try client.submit(Submission([OperationSpec(name: "a")])).job == 1)
    }

    @Test func aFinishHeldInMemoryOnAFullDiskSurvivesACrashThroughItsWorker() throws {
        let (cluster, disk, connection, once, started, release, file) = try Self.start(slots: 1, holding: "once")
        defer { cluster.stop() }
        defer { disk.unmount() }
        var client = connection
        let receipt = try client.submit(Submission([once]))
        #expect(started.wait(within: 30) != nil, "it did not start\n\(cluster.logs)")

        // It finishes while the disk is full: the coordinator shows it, but cannot journal it…
        let filler = try disk.fill()
        #expect(FileManager.default.createFile(atPath: release, contents: nil))
        let waited = try client.request(timeout: 40) { $0.wait.operation = receipt.operations[0]; $0.wait.timeoutSeconds = 30 }.reply.waited
        #expect(!waited.timedOut, "it did not finish\n\(cluster.logs)")
        #expect(cluster.coordinator?.output.contains("journal disk full") == true, "\(cluster.logs)")
        // …and dies before there is room. The worker still holds the report and gives it to the next one.
        cluster.killCoordinator()
        try FileManager.default.removeItem(atPath: filler)
        try cluster.startCoordinator(Self.grace)
        client = try CoordinatorConnection(endpoint: cluster.clientsEndpoint)
        let job = try client.finish(receipt.job, within: 60, cluster: cluster)
        #expect(job.counts.succeeded == 1, "\(job.counts)\n\(cluster.logs)")
        #expect(try client.operation(OperationID(receipt.operations[0])).info.attempt == 1)
        #expect(Evidence.lines(file) == ["once"], "it ran again: \(Evidence.lines(file))")
    }
}
