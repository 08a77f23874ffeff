/// One child process: an argv run without a shell, with optional environment and working directory.
public struct Command: Hashable, Sendable {
    /// Program and arguments; `argv[0]` is looked up in `PATH` by the worker.
    public var argv: [String]
    /// Variables added to (or overriding) the worker's environment.
    public var environment: [String: String]
    /// Working directory; nil = the worker's.
    public var workingDirectory: String?
    /// Files the command reads (job files' `inputs:`; relative to the working directory; `*` globs).
    public var inputs: [String] = []
    /// Files it makes (`outputs:`): when all exist and none is older than any input, the worker
    /// finishes the operation `succeeded`/`upToDate` without running it.
    public var outputs: [String] = []

    /// Creates a command.
    public init(_ argv: [String], environment: [String: String] = [:], workingDirectory: String? = nil) {
        self.argv = argv
        self.environment = environment
        self.workingDirectory = workingDirectory
    }

    /// A command run by `/bin/sh -c script` — only when the user asks for a shell explicitly.
    public static func shell(_ script: String, environment: [String: String] = [:], workingDirectory: String? = nil) -> Command {
        Command(["/bin/sh", "-c", script], environment: environment, workingDirectory: workingDirectory)
    }
}

/// What an operation does when it runs (SEMANTICS §1).
public enum Work: Hashable, Sendable {
    /// Nothing: a join point. It needs no worker and finishes as soon as it is ready and its queue runs.
    case empty
    /// One child process.
    case command(Command)
    /// Several child processes run concurrently on one worker; succeeds only if all succeed.
    case commands([Command])
    /// An in-process handler registered on workers under `name`, given `payload`.
    case handler(name: String, payload: [UInt8])
    /// Several handler calls run at once on one worker (Foundation's `BlockOperation` with
    /// `addExecutionBlock`); it finishes when all have, and succeeds only if all succeed. Its result is
    /// the calls' results in order (``HandlerCall/combinedResult(_:)``).
    case handlers([HandlerCall])

    /// True for `.empty`.
    public var isEmpty: Bool { if case .empty = self { true } else { false } }

    /// The same work with every command's ``Command/inputs`` and ``Command/outputs`` set (`[]`, `[]`: cleared).
    public func withFiles(inputs: [String], outputs: [String]) -> Work {
        func set(_ command: Command) -> Command {
            var command = command
            command.inputs = inputs
            command.outputs = outputs
            return command
        }
        switch self {
        case .command(let command): return .command(set(command))
        case .commands(let commands): return .commands(commands.map(set))
        case .empty, .handler, .handlers: return self
        }
    }
}
