import Foundation

/// The directory holding opq's built executables (`opq`, `opq-coordinator`, `opq-worker`): the one way
/// `opq run`, `opq-bench` and the tests find them.
///
/// Looked for, in order: a directory given explicitly (`opq-bench --bin-dir`), `$OPQ_BIN_DIR`, the
/// directory of the running executable and up to three of its parents (a test bundle sits inside the
/// build directory), each directory on `PATH`, then `.build/debug` under the current directory. An
/// explicit directory and `$OPQ_BIN_DIR` are final: when they lack an executable, that is the error.
public struct BinaryDirectory: Sendable, Hashable, CustomStringConvertible {
    /// The environment variable naming the directory.
    public static let environmentVariable = "OPQ_BIN_DIR"

    /// The directory's path.
    public let path: String

    /// The directory at `path`, taken as it is (no checks).
    public init(_ path: String) { self.path = path }

    /// The path of `executable` in this directory.
    public func path(of executable: String) -> String { path + "/" + executable }

    public var description: String { path }

    /// Finds the directory holding every one of `executables` (see the type's documentation for where).
    ///
    /// - Throws: ``BinaryDirectoryError`` naming what is missing, where it looked and what to do.
    public static func locate(
        _ executables: [String] = ["opq-coordinator", "opq-worker"], explicit: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(BinaryDirectoryError) -> BinaryDirectory {
        if let fixed = explicit.map({ ($0, "the given directory") })
            ?? environment[environmentVariable].map({ ($0, "$\(environmentVariable)") }) {
            let directory = BinaryDirectory(URL(fileURLWithPath: fixed.0).standardizedFileURL.path)
            let missing = executables.filter { !FileManager.default.isExecutableFile(atPath: directory.path(of: $0)) }
            guard missing.isEmpty else { throw BinaryDirectoryError(missing: missing, searched: [directory.path], source: fixed.1) }
            return directory
        }
        let candidates = searchPath(environment: environment)
        for candidate in candidates
        where executables.allSatisfy({ FileManager.default.isExecutableFile(atPath: candidate + "/" + $0) }) {
            return BinaryDirectory(candidate)
        }
        throw BinaryDirectoryError(missing: executables, searched: candidates, source: nil)
    }

    /// Where ``locate(_:explicit:environment:)`` looks when no directory is fixed, in order.
    static func searchPath(environment: [String: String]) -> [String] {
        var candidates: [String] = []
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: me).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(directory.path)
            directory.deleteLastPathComponent()
        }
        candidates += (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        candidates.append(FileManager.default.currentDirectoryPath + "/.build/debug")
        var seen = Set<String>()
        return candidates.filter { seen.insert($0).inserted }
    }
}

/// Built executables were not found: which, where we looked, and how to fix it.
public struct BinaryDirectoryError: Error, CustomStringConvertible {
    /// The executables not found.
    public let missing: [String]
    /// The directories searched.
    public let searched: [String]
    /// What fixed the directory (`$OPQ_BIN_DIR`, the given directory), or nil when it was searched for.
    public let source: String?

    public var description: String {
        let names = missing.joined(separator: " and ")
        if let source, let directory = searched.first {
            return "\(names) not found (or not executable) in \(directory), \(source); build them there (swift build) or point \(source) at the directory holding them"
        }
        return "cannot find \(names) next to this program, on PATH or in .build/debug; build them (swift build) or set \(BinaryDirectory.environmentVariable) to the directory holding them"
    }
}
