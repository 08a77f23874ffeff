import Foundation

extension ChildProcess {
    /// Its output so far: what was captured, else its log file's content, else empty.
    public var output: String { String(decoding: outputBytes, as: UTF8.self) }

    /// Its output so far as bytes (binary output).
    public var outputBytes: [UInt8] {
        if isCapturing { return state.withLock { state.output } }
        guard let logPath, let data = FileManager.default.contents(atPath: logPath) else { return [] }
        return [UInt8](data)
    }

    /// The last `lines` lines of its output, indented under a header naming it, for error messages.
    public func tail(_ lines: Int = 15) -> String {
        let all = output.split(separator: "\n", omittingEmptySubsequences: false)
        return "── \(name) (pid \(pid))" + (logPath.map { ", last lines of \($0)" } ?? "") + ":\n"
            + all.suffix(lines).map { "   " + $0 }.joined(separator: "\n")
    }

    /// Waits up to `seconds` until its output contains `text`: woken by each captured read, or by inotify
    /// on each write to its log file.
    public func waitForOutput(_ text: String, within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        if isCapturing {
            return state.withLock {
                while !String(decoding: state.output, as: UTF8.self).contains(text) {
                    guard state.condition.wait(until: deadline) else { return String(decoding: state.output, as: UTF8.self).contains(text) }
                }
                return true
            }
        }
        guard let logPath else { return false }
        let watch = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard watch >= 0 else { return output.contains(text) }
        // Closing an inotify descriptor waits for the kernel's grace period (≈ 15 ms here): a close on
        // this thread was most of the time `opq map --local` and `opq run` took to start. Another
        // thread closes it.
        defer { DispatchQueue.global(qos: .utility).async { close(watch) } }
        _ = inotify_add_watch(watch, logPath, UInt32(IN_MODIFY))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !output.contains(text) {
            guard Date() < deadline else { return false }
            var item = pollfd(fd: watch, events: Int16(POLLIN), revents: 0)
            _ = poll(&item, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000)))
            _ = read(watch, &buffer, buffer.count)
        }
        return true
    }
}
