import Foundation
import OPQCore
import Yams

/// A parsed job file: the ``Submission`` it describes and where each operation is written.
///
/// YAML and JSON share one schema (docs/job-files.md) and one parser: JSON is read as YAML (a file
/// named `*.json` is first checked to be strict JSON), so both get the same line numbers in errors.
/// A file is accepted whole or not at all: parsing also runs the scheduler's own submission checks
/// (unknown dependencies, cycles, duplicate names, ranges), so a file that parses here is not refused
/// by a coordinator for its contents.
public struct JobFile: Sendable {
    /// The file as the user named it (used in errors).
    public var file: String
    /// The operations and queue settings, in file order.
    public var submission: Submission
    /// Operation index (0-based, batch order) → 1-based line where the operation starts.
    public var operationLines: [Int: Int]
    /// Operation index → field (`name`, `timeout`, `after:NAME`, `commands[1]`) → line of its value.
    var fieldLines: FieldLines
    /// Queue name → line of its settings under `queues:`.
    var queueLines: [String: Int]
    /// `after_jobs:`: jobs of the coordinator this file waits for (resolved by `opq submit`).
    public var afterJobs: [JobID] = []

    /// Reads and parses the file at `path`.
    /// - Throws: ``JobFileError`` naming the file, line and field of the first mistake.
    public static func load(path: String) throws(JobFileError) -> JobFile {
        // The bytes as read are let go before parsing: a 13 MB file is not held twice while it is read.
        let text = try read(path: path)
        return try parse(text, file: path, isJSON: path.lowercased().hasSuffix(".json"))
    }

    /// The text of the file at `path`, refused when it cannot be read or is not UTF-8.
    private static func read(path: String) throws(JobFileError) -> String {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let reason = (error as NSError).localizedFailureReason ?? "\(error.localizedDescription)"
            throw JobFileError(file: path, line: nil, message: "cannot read the file: \(reason)")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            let (line, offset) = firstInvalidUTF8(in: data)
            throw JobFileError(file: path, line: line,
                               message: "the file is not UTF-8 text: invalid byte 0x\(String(data[data.startIndex + offset], radix: 16, uppercase: true)) "
                                   + "at byte \(offset + 1); save it as UTF-8")
        }
        return text
    }

    /// Parses job-file text. `file` names it in errors; `isJSON` demands strict JSON.
    /// - Throws: ``JobFileError`` naming the file, line and field of the first mistake.
    public static func parse(_ text: String, file: String, isJSON: Bool = false) throws(JobFileError) -> JobFile {
        if isJSON { try StrictJSON.check(text, file: file) }
        // Before Yams: its composer recurses once per level and would overflow the stack.
        try NestingLimit.check(text, file: file)
        var parser = JobFileParser(file: file)
        if isJSON, let slices = JSONOperationSlices(Array(text.utf8)) {
            try parseSlices(slices, into: &parser)
        } else {
            let root = try compose(text, file: file, isJSON: isJSON, reader: parser.reader, maxNodes: maxNodes(text))
            try parser.parse(root)
        }
        try parser.passDependencyOutputs()
        let job = JobFile(file: file, submission: Submission(parser.operations, queueSettings: parser.queueSettings),
                          operationLines: parser.operationLines, fieldLines: parser.fieldLines, queueLines: parser.queueLines,
                          afterJobs: parser.afterJobs)
        try job.check()
        return job
    }

    /// How many values aliases may expand a file of `text` to: what a file could plausibly spell out.
    private static func maxNodes(_ text: String) -> Int { 1_000_000 + 64 * text.utf8.count }

    /// Composes `text` with Yams and refuses tags outside the core schema; `reader` locates errors.
    /// `maxNodes` nil: the text is strict JSON (``StrictJSON`` passed it), which holds neither tags nor
    /// aliases, so the walk over every node that looks for them is skipped (≈ 9% of a big file's time).
    private static func compose(_ text: String, file: String, isJSON: Bool, reader: NodeReader, maxNodes: Int?)
        throws(JobFileError) -> Node?
    {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw syntaxError(error, file: file, isJSON: isJSON, lineOffset: reader.lineOffset)
        }
        // Aliases may repeat a subtree without bound; allow what a file could plausibly spell out.
        if let root, let maxNodes { try reader.checkTags(root, maxNodes: maxNodes) }
        return root
    }

    /// A JSON file read a slice of operations at a time (``JSONOperationSlices``): the top-level fields
    /// first, then each slice of items, with the lines of the whole file.
    private static func parseSlices(_ slices: JSONOperationSlices, into parser: inout JobFileParser) throws(JobFileError) {
        let file = parser.reader.file
        // The size is known: no doubling of the arrays (and no second copy while one grows) as they fill.
        parser.operations.reserveCapacity(slices.items.count)
        parser.fieldLines.reserveCapacity(operations: slices.items.count)
        parser.operationLines.reserveCapacity(slices.items.count)
        let list = try parser.parseTopLevel(try compose(slices.outline, file: file, isJSON: true, reader: parser.reader, maxNodes: nil))
        _ = try parser.operationItems(list, count: slices.items.count)
        var start = 0
        while start < slices.items.count {
            let end = min(start + JSONOperationSlices.sliceSize, slices.items.count)
            if let nodes = slices.nodes(start..<end) {
                parser.reader.lineOffset = 0
                try parser.parseItems(Node.Sequence(nodes))
                start = end
                continue
            }
            let (text, lineOffset) = slices.slice(start..<end)
            parser.reader.lineOffset = lineOffset
            guard case .sequence(let items)? = try compose(text, file: file, isJSON: true, reader: parser.reader, maxNodes: nil) else {
                preconditionFailure("a slice of a JSON array is a JSON array")
            }
            try parser.parseItems(items)
            start = end
        }
        parser.reader.lineOffset = 0
        try parser.resolveForeachDependencies()
    }

    /// `--force`: the file with every operation's `inputs`/`outputs` dropped, so none is skipped as up to date.
    public func forcingEveryOperation() -> JobFile {
        var copy = self
        for k in copy.submission.operations.indices {
            copy.submission.operations[k].work = copy.submission.operations[k].work.withFiles(inputs: [], outputs: [])
        }
        return copy
    }

    /// Runs the scheduler's submission checks (``Scheduler/check(_:)``: nothing is built) and locates any refusal.
    func check() throws(JobFileError) {
        do {
            try Scheduler().check(submission)
        } catch {
            throw locate(error)
        }
    }

    /// The 1-based line and 0-based byte offset of the first byte of `data` that is not valid UTF-8.
    static func firstInvalidUTF8(in data: Data) -> (line: Int, offset: Int) {
        var line = 1, offset = 0
        var parser = Unicode.UTF8.ForwardParser()
        var bytes = data.makeIterator()
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let scalar):
                if scalar.count == 1, scalar.first == UInt8(ascii: "\n") { line += 1 }
                offset += scalar.count
            case .error, .emptyInput:
                return (line, min(offset, max(data.count - 1, 0)))
            }
        }
    }

    /// A Yams error as a located syntax error.
    /// `lineOffset`: lines of the file before the composed text (a slice of a JSON file's operations).
    private static func syntaxError(_ error: Error, file: String, isJSON: Bool, lineOffset: Int) -> JobFileError {
        let kind = isJSON ? "JSON" : "YAML"
        if let error = error as? YamlError {
            switch error {
            case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _), let .composer(context, problem, mark, _):
                let detail = context.map { "\($0.text) at line \($0.mark.line + lineOffset): " } ?? ""
                return JobFileError(file: file, line: mark.line + lineOffset, message: "\(kind) syntax error: \(detail)\(problem) (column \(mark.column))")
            default:
                break
            }
            let description = "\(error)"
            // Errors without a Mark payload (e.g. duplicate keys in newer Yams) start with "LINE:COLUMN:".
            if let first = description.split(separator: ":").first, let line = Int(first) {
                let firstLine = description.split(separator: "\n").first.map(String.init) ?? description
                let message = "\(line + lineOffset)" + firstLine.dropFirst(first.count)
                return JobFileError(file: file, line: line + lineOffset, message: "\(kind) error: \(message)")
            }
            return JobFileError(file: file, line: nil, message: "\(kind) error: \(description)")
        }
        return JobFileError(file: file, line: nil, message: "\(kind) error: \(error)")
    }
}
