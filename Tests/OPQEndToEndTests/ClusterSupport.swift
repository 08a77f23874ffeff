import Foundation
@_spi(Wire) import OPQClient
import OPQCore
import OPQWire
import Testing

/// Commands that leave evidence in files, so tests observe what really ran.
enum Evidence {
    /// Appends `name` to `file` (one line per completed run).
    static func append(_ name: String, to file: String, after sleep: Double = 0) -> Work {
        .command(Command(["/bin/sh", "-c", "sleep \"$2\"; echo \"$0\" >> \"$1\"", name, file, String(sleep)]))
    }

    /// Records "start NAME TIME" and "end NAME TIME" lines (nanosecond clock) around a short sleep.
    static func interval(_ name: String, to file: String, sleep: Double) -> Work {
        .command(Command(["/bin/sh", "-c",
                          "echo \"start $0 $(date +%s.%N)\" >> \"$1\"; sleep \"$2\"; echo \"end $0 $(date +%s.%N)\" >> \"$1\"",
                          name, file, String(sleep)]))
    }

    /// The lines of `file` (empty when it does not exist).
    static func lines(_ file: String) -> [String] {
        ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}

extension CoordinatorConnection {
    /// Waits for `job` to finish within `seconds`, failing the test (with the cluster's logs) if it does not.
    func finish(_ job: UInt64, within seconds: Double, cluster: TestCluster) throws -> Opq_V1_JobInfo {
        let result = try wait(job: JobID(job), timeout: seconds)
        #expect(!result.timedOut, "job \(job) did not finish within \(seconds) s\n\(cluster.logs)")
        return result.job
    }

    /// Sets a queue's settings.
    func configure(_ queue: String, _ settings: QueueSettings) throws {
        try request { $0.setQueue = Opq_V1_QueueSettings(queue: queue, settings) }
    }
}

/// A named pipe the test reads with a deadline: a command writes to it to say "I got this far", so
/// the test waits on that event itself rather than sleeping.
struct Signal {
    let path: String

    init(_ path: String) throws {
        guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        self.path = path
    }

    /// Waits up to `seconds` for a writer to write a line; returns it, or nil on timeout.
    func wait(within seconds: Double) -> String? {
        // Opened read-write, the pipe always has a writer (us), so poll waits for data instead of
        // reporting end-of-file while the command has not opened it yet.
        let fd = open(path, O_RDWR | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let deadline = Date().addingTimeInterval(seconds)
        var text = ""
        while Date() < deadline {
            var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&poll, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = read(fd, &buffer, buffer.count)
            if count > 0 { text += String(decoding: buffer[..<count], as: UTF8.self) }
            if text.contains("\n") { return text.trimmingCharacters(in: .whitespacesAndNewlines) }
        }
        return nil
    }
}
