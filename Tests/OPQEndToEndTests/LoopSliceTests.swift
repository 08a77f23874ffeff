import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQSpawn
import OPQWire
import Testing

/// The loops' short time slices (`LoopThread`, docs/architecture.md) in the real executables: the thread
/// that runs the coordinator's loop (with the workers it hosts), and a worker process's socket thread, have
/// them; the commands they spawn, and every other thread, keep the default.
@Suite(.serialized) struct LoopSliceTests {
    static let short: UInt64 = 100_000

    /// Each thread of process `pid` with its slice (threads whose `sched` file shows none are left out).
    static func threadSlices(of pid: Int32) -> [Int32: UInt64] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var slices: [Int32: UInt64] = [:]
        for task in tasks {
            guard let tid = Int32(task), let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/sched", encoding: .utf8),
                  let slice = LoopThread.slice(inSchedText: text) else { continue }
            slices[tid] = slice
        }
        return slices
    }

    /// Whether this kernel shows slices and honours a thread's own (Linux ≥ 6.12 with scheduler debugging,
    /// as here and on CI): a thread of this process asks, and reads its slice back.
    static var kernelHonoursOwnSlices: Bool {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var honoured = false
        let thread = Thread {
            honoured = LoopThread.preferShortSlices() == .applied
                && (try? String(contentsOfFile: "/proc/thread-self/sched", encoding: .utf8)).flatMap(LoopThread.slice(inSchedText:)) == short
            done.signal()
        }
        thread.start()
        done.wait()
        return honoured
    }

    /// Runs `command` on the cluster and returns its standard output.
    static func run(_ command: [String], on endpoint: String) throws -> String {
        let coordinator = try RemoteCoordinator(endpoint: endpoint, timeout: 20)
        defer { coordinator.close() }
        let queue = RemoteOperationQueue(name: "slices", coordinator: coordinator)
        let operation = RemoteOperation(command: command)
        try queue.addOperations([operation], waitUntilFinished: false)
        guard operation.waitUntilFinished(timeout: 60), operation.outcome == .succeeded else { return "" }
        return try operation.output().standardOutputText
    }

    @Test func theOneProcessClustersLoopHasShortSlicesAndItsCommandsDoNot() throws {
        guard Self.kernelHonoursOwnSlices else { return }
        let cluster = try OneProcessClusterTests.start(workers: 1, slots: 1, journaled: false)
        defer { cluster.stop() }
        let commandSched = try Self.run(["/bin/cat", "/proc/self/sched"], on: cluster.clientsEndpoint)
        let pid = try #require(cluster.coordinator?.pid)
        let slices = Self.threadSlices(of: pid)
        // The loop runs on the main thread (its id is the process's); no other thread asked.
        #expect(slices[pid] == Self.short, "\(slices)")
        #expect(slices.filter { $0.key != pid }.allSatisfy { $0.value != Self.short }, "\(slices)")
        let commandSlice = try #require(LoopThread.slice(inSchedText: commandSched), "the command printed no slice:\n\(commandSched)\n\(cluster.logs)")
        #expect(commandSlice != Self.short)
    }

    @Test func aWorkerProcesssSocketThreadHasShortSlicesAndItsCommandsDoNot() throws {
        guard Self.kernelHonoursOwnSlices else { return }
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator(journaled: false)
        let worker = try cluster.startWorker("w1")
        let commandSched = try Self.run(["/bin/cat", "/proc/self/sched"], on: cluster.clientsEndpoint)
        let slices = Self.threadSlices(of: worker.pid)
        // Exactly one thread of the worker asked: the one serving its connection (which spawned the command).
        #expect(slices.values.filter { $0 == Self.short }.count == 1, "\(slices)\n\(cluster.logs)")
        let commandSlice = try #require(LoopThread.slice(inSchedText: commandSched), "the command printed no slice:\n\(commandSched)\n\(cluster.logs)")
        #expect(commandSlice != Self.short)
        // The coordinator of a cluster of worker processes: its loop's thread too.
        let coordinatorPid = try #require(cluster.coordinator?.pid)
        #expect(Self.threadSlices(of: coordinatorPid)[coordinatorPid] == Self.short)
    }
}
