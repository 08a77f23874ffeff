import Crypto
import Foundation
import OPQCore
#if canImport(Glibc)
import Glibc
#endif

/// The handlers every `opq-worker` ships.
public enum BuiltinHandlers {
    /// Registers `noop`, `sleep` and `sha256` in `registry`.
    public static func register(in registry: HandlerRegistry) {
        registry.register("noop") { NoopHandler(context: $0) }
        registry.register("sleep") { try SleepHandler(parsing: $0) }
        registry.register("sha256") { try SHA256Handler(parsing: $0) }
    }
}

/// `noop`: succeeds at once. Used by the throughput benchmark, so it does nothing at all.
// @unchecked Sendable: restated as every `Operation` subclass must; it adds no state.
public final class NoopHandler: HandlerOperation, @unchecked Sendable {
    override public var executesOnOwnThread: Bool { false }

    override public func execute() throws {}
}

/// `sleep`: payload = seconds as UTF-8 text (e.g. `"2.5"`); returns early when cancelled.
// @unchecked Sendable: restated as every `Operation` subclass must; its own state is one immutable `let`.
public final class SleepHandler: HandlerOperation, @unchecked Sendable {
    /// How long it sleeps.
    public let seconds: Double

    /// Parses the payload; throws ``HandlerError`` if it is not a non-negative number.
    public init(parsing context: HandlerContext) throws {
        let text = (context.payloadText ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
            throw HandlerError("sleep: payload must be a number of seconds as text, got '\(text)'")
        }
        self.seconds = seconds
        super.init(context: context)
    }

    override public func execute() throws {
        _ = waitForCancellation(timeout: seconds)
    }
}

/// `sha256`: payload = a file path (UTF-8); result = the file's SHA-256 as lowercase hex.
///
/// Streams the file in 1 MiB chunks, checks `isCancelled` between chunks and reports progress.
// @unchecked Sendable: restated as every `Operation` subclass must; its own state is one immutable `let`.
public final class SHA256Handler: HandlerOperation, @unchecked Sendable {
    /// The file to hash.
    public let path: String
    static let chunkSize = 1 << 20

    /// Parses the payload; throws ``HandlerError`` if it is empty or not UTF-8.
    public init(parsing context: HandlerContext) throws {
        guard let path = context.payloadText, !path.isEmpty else {
            throw HandlerError("sha256: payload must be a file path as UTF-8 text")
        }
        self.path = path
        super.init(context: context)
    }

    override public func execute() throws {
        let fd = try SystemCall.check("open", path) { open(path, O_RDONLY | O_CLOEXEC) }
        defer { _ = close(fd) }
        var info = stat()
        try SystemCall.check("fstat", path) { fstat(fd, &info) }
        let size = max(Int(info.st_size), 1)
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: Self.chunkSize)
        var total = 0
        while !isCancelled {
            let count = try buffer.withUnsafeMutableBytes { bytes in
                try SystemCall.check("read", path) { read(fd, bytes.baseAddress, bytes.count) }
            }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            total += count
            reportProgress(fraction: Double(total) / Double(size))
        }
        guard !isCancelled else { return }
        let digest = hasher.finalize()
        result = Array(digest.map { String(format: "%02x", $0) }.joined().utf8)
    }
}
