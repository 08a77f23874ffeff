#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a CURVE key could not be read or written; the description names the file (or variable) and
/// what to do.
public struct CurveKeyError: Error, CustomStringConvertible, Equatable {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// CURVE keys on disk and in the environment: the one place every opq executable and `OPQClient` read
/// them from.
///
/// A key file holds one 40-character Z85 key (and optionally a newline). `opq keys generate` writes a
/// pair as `NAME.public` (mode 0644: give it to the other side) and `NAME.secret` (mode 0600). A secret
/// key file that its group or others can read is refused, like ssh does with private keys.
///
/// Environment variables carry the key itself, not a file name, for schedulers that pass secrets that
/// way: ``secretKeyVariable`` (this process's secret key) and ``serverKeyVariable`` (the coordinator's
/// public key). A command-line file wins over a variable.
public enum CurveKeys {
    /// This process's own secret key, Z85 (`OPQ_CURVE_SECRET_KEY`).
    public static let secretKeyVariable = "OPQ_CURVE_SECRET_KEY"
    /// The coordinator's public key, Z85 (`OPQ_SERVER_KEY`), for workers and clients.
    public static let serverKeyVariable = "OPQ_SERVER_KEY"
    /// The extension of a public key file (what an authorized-keys directory holds).
    public static let publicExtension = "public"
    /// The extension of a secret key file.
    public static let secretExtension = "secret"

    /// Reads the key pair whose secret key is in `path`; refuses a file its group or others can read.
    public static func readSecretKey(file path: String) throws(CurveKeyError) -> CurveKeyPair {
        let mode = try fileMode(path)
        guard mode & 0o077 == 0 else {
            throw CurveKeyError("""
                the secret key file \(path) can be read by others (mode \(String(mode & 0o777, radix: 8))): \
                run 'chmod 600 \(path)'
                """)
        }
        return try pair(fromSecret: try readKey(path), source: path)
    }

    /// Reads a public key from `path` (a file any user may read).
    public static func readPublicKey(file path: String) throws(CurveKeyError) -> String {
        let key = try readKey(path)
        guard CurveKeyPair.isValidKey(key) else {
            throw CurveKeyError("\(path) does not hold a CURVE public key (40 Z85 characters, as written by 'opq keys generate')")
        }
        return key
    }

    /// This process's key pair: from `file` if given, else from ``secretKeyVariable``; nil if neither is set.
    public static func ownKeys(file: String?, environment: [String: String]) throws(CurveKeyError) -> CurveKeyPair? {
        if let file { return try readSecretKey(file: file) }
        guard let text = environment[secretKeyVariable], !text.isEmpty else { return nil }
        return try pair(fromSecret: text.trimmingSpace, source: "$\(secretKeyVariable)")
    }

    /// The coordinator's public key: from `file` if given, else from ``serverKeyVariable``; nil if neither is set.
    public static func serverKey(file: String?, environment: [String: String]) throws(CurveKeyError) -> String? {
        if let file { return try readPublicKey(file: file) }
        guard let text = environment[serverKeyVariable], !text.isEmpty else { return nil }
        let key = text.trimmingSpace
        guard CurveKeyPair.isValidKey(key) else {
            throw CurveKeyError("$\(serverKeyVariable) is not a CURVE public key (40 Z85 characters)")
        }
        return key
    }

    /// The public keys in `directory`: every `*.public` file; other files are ignored.
    public static func publicKeys(in directory: String) throws(CurveKeyError) -> Set<String> {
        guard let handle = opendir(directory) else {
            throw CurveKeyError("cannot read the key directory \(directory): \(String(cString: strerror(errno)))")
        }
        defer { closedir(handle) }
        var keys = Set<String>()
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasSuffix(".\(publicExtension)"), !name.hasPrefix(".") else { continue }
            keys.insert(try readPublicKey(file: directory + "/" + name))
        }
        return keys
    }

    /// Writes `keys` as `directory/name.public` (0644) and `directory/name.secret` (0600); refuses to
    /// overwrite either. Returns both paths.
    @discardableResult
    public static func write(_ keys: CurveKeyPair, to directory: String, name: String) throws(CurveKeyError) -> (publicFile: String, secretFile: String) {
        let publicFile = "\(directory)/\(name).\(publicExtension)"
        let secretFile = "\(directory)/\(name).\(secretExtension)"
        try create(secretFile, keys.secretKey + "\n", mode: 0o600)
        try create(publicFile, keys.publicKey + "\n", mode: 0o644)
        return (publicFile, secretFile)
    }

    // MARK: - Files

    private static func pair(fromSecret text: String, source: String) throws(CurveKeyError) -> CurveKeyPair {
        guard CurveKeyPair.isValidKey(text), let keys = try? CurveKeyPair(secretKey: text) else {
            throw CurveKeyError("\(source) does not hold a CURVE secret key (40 Z85 characters, as written by 'opq keys generate')")
        }
        return keys
    }

    private static func fileMode(_ path: String) throws(CurveKeyError) -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw CurveKeyError("cannot read the key file \(path): \(String(cString: strerror(errno)))")
        }
        return info.st_mode
    }

    /// The file's text without surrounding white space (a key file is tiny; more than 1 KiB is not one).
    private static func readKey(_ path: String) throws(CurveKeyError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CurveKeyError("cannot read the key file \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = read(fd, &buffer, buffer.count)
        guard count >= 0 else { throw CurveKeyError("cannot read the key file \(path): \(String(cString: strerror(errno)))") }
        return String(decoding: buffer[..<count], as: UTF8.self).trimmingSpace
    }

    private static func create(_ path: String, _ text: String, mode: mode_t) throws(CurveKeyError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else {
            let reason = errno == EEXIST ? "it exists (remove it first to replace the key)" : String(cString: strerror(errno))
            throw CurveKeyError("cannot write the key file \(path): \(reason)")
        }
        defer { close(fd) }
        _ = fchmod(fd, mode)  // the umask must not widen or narrow it
        let bytes = Array(text.utf8)
        guard Glibc.write(fd, bytes, bytes.count) == bytes.count else {
            throw CurveKeyError("cannot write the key file \(path): \(String(cString: strerror(errno)))")
        }
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line breaks.
    fileprivate var trimmingSpace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
