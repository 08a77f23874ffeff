import Foundation
import OPQRuntime
import Testing

/// The launcher's own behaviour, with stand-in executables (shell scripts named opq-coordinator and
/// opq-worker that print their arguments and wait): the real cluster is exercised by the end-to-end tests.
struct LocalClusterTests {
    private static func fakeBinaries() throws -> BinaryDirectory {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("opq-fake-bin-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for name in ["opq-coordinator", "opq-worker"] {
            let script = "#!/bin/sh\necho \"\(name) $*\"\n[ \"$1\" = --workers-endpoint ] && echo \"opq-coordinator workers=$2 clients=$4\"\ntrap 'echo stopped; exit 0' TERM\nwhile :; do sleep 1; done\n"
            try script.write(toFile: path + "/" + name, atomically: true, encoding: .utf8)
            chmod(path + "/" + name, 0o755)
        }
        return BinaryDirectory(path)
    }

    @Test func processesGetTheClustersEndpointsAndStopRemovesTheDirectoryItMade() throws {
        let binaries = try Self.fakeBinaries()
        defer { try? FileManager.default.removeItem(atPath: binaries.path) }
        let cluster = try LocalCluster(binaries: binaries, prefix: "opq-runtime-test")
        #expect(cluster.workersEndpoint == "ipc://\(cluster.directory)/workers.sock")
        try cluster.startCoordinator(["--extra"])
        try cluster.startWorker("w1", slots: 3)
        let line = try cluster.coordinatorStartLine(within: 30)
        #expect(line == "opq-coordinator workers=\(cluster.workersEndpoint) clients=\(cluster.clientsEndpoint)")
        #expect(cluster.worker("w1")!.waitForOutput("--slots 3", within: 30))
        #expect(cluster.coordinator!.output.contains("--state \(cluster.stateDirectory) --log-level warning --extra"))
        #expect(cluster.exitedProcess == nil)
        let processes = cluster.processes
        cluster.stop(grace: 10)
        #expect(processes.allSatisfy { !$0.isRunning })
        #expect(!FileManager.default.fileExists(atPath: cluster.directory))
        cluster.stop()
    }

    @Test func loopbackTCPEndpointsAreTwoDistinctFreePorts() throws {
        let binaries = try Self.fakeBinaries()
        defer { try? FileManager.default.removeItem(atPath: binaries.path) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-runtime-\(UUID().uuidString.prefix(8))").path
        let cluster = try LocalCluster(binaries: binaries, directory: directory, endpoints: .loopbackTCP)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(cluster.workersEndpoint.hasPrefix("tcp://127.0.0.1:"))
        #expect(cluster.workersEndpoint != cluster.clientsEndpoint)
        cluster.kill()
        // A directory given to the cluster is kept.
        #expect(FileManager.default.fileExists(atPath: directory))
    }
}
