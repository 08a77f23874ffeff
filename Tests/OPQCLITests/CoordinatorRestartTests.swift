import Foundation
import Testing

/// `opq watch` and `opq wait` without a deadline follow a job across a coordinator restart: the
/// coordinator is killed (SIGKILL) while the job's command runs and started again on the same endpoints
/// and state directory; both notice, follow the new one and end with the job's status.
@Suite(.serialized) struct CoordinatorRestartTests {
    @Test func watchAndWaitWithoutATimeoutOutliveACoordinatorRestart() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let clients = "ipc://\(scratch.path("clients.sock"))"
        let workers = "ipc://\(scratch.path("workers.sock"))"
        let arguments = ["--workers-endpoint", workers, "--clients-endpoint", clients, "--state", scratch.path("state")]
        var coordinator = try Run("opq-coordinator", arguments, in: scratch)
        defer { coordinator.stop() }
        let worker = try Run("opq-worker", ["--coordinator", workers, "--slots", "1", "--name", "w1"], in: scratch)
        defer { worker.stop() }
        let environment = ["OPQ_COORDINATOR": clients]
        let fifo = scratch.path("go")
        #expect(mkfifo(fifo, 0o600) == 0)

        let add = try Run("opq", ["add", "--name", "held", "--shell", "--", "read line < '\(fifo)'"], in: scratch, environment: environment)
        #expect(add.finish(within: 30) == 0, "\(add.stderr)")
        let watch = try Run("opq", ["watch", "job-1"], in: scratch, environment: environment)
        defer { watch.stop() }
        let wait = try Run("opq", ["wait", "job-1"], in: scratch, environment: environment)
        defer { wait.stop() }
        #expect(watch.waitForOutput("started", within: 60), "\(watch.stdout)\(watch.stderr)\(coordinator.stderr)")

        coordinator.stop()
        coordinator = try Run("opq-coordinator", arguments, in: scratch)
        // The worker reconnects and says it still runs the attempt; then the command is released.
        let writer = open(fifo, O_WRONLY)
        #expect(writer >= 0)
        _ = "go\n".withCString { write(writer, $0, 3) }
        close(writer)

        // The watch asks again after 5 s without news; the wait after its slice (30 s) and 10 s without an answer.
        #expect(watch.finish(within: 30) == 0, "\(watch.stdout)\(watch.stderr)\n\(coordinator.stderr)")
        #expect(watch.stdout.contains("succeeded held"), "\(watch.stdout)")
        #expect(wait.finish(within: 60) == 0, "\(wait.stdout)\(wait.stderr)")
        #expect(wait.stdout.contains("job-1: 1 succeeded"), "\(wait.stdout)")
    }
}
