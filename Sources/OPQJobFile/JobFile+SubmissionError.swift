import OPQCore

extension JobFile {
    /// Line of operation `index`'s `field` value, else of the operation.
    func line(ofOperation index: Int, field: String? = nil) -> Int? {
        field.flatMap { fieldLines.line(index, $0) } ?? operationLines[index]
    }

    /// The core's refusal of this file's submission (by a local check or by a coordinator), located in the file.
    public func locate(_ error: SubmissionError) -> JobFileError {
        let operations = submission.operations
        func label(_ index: Int) -> String {
            operations.indices.contains(index) && !operations[index].name.isEmpty
                ? "operation '\(operations[index].name)'" : "operation #\(index + 1)"
        }
        switch error {
        case .empty:
            return JobFileError(file: file, line: 1, field: "operations", message: "the job holds no operation")
        case let .duplicateName(name, index, firstIndex):
            let first = line(ofOperation: firstIndex, field: "name").map { "line \($0)" } ?? "operation #\(firstIndex + 1)"
            return JobFileError(file: file, line: line(ofOperation: index, field: "name"), subject: label(index), field: "name",
                                message: "duplicate name '\(name)' (first used on \(first)); names must be unique within a job")
        case let .unknownDependency(index, _, reference, suggestion):
            var field = "after"
            if case .name(let name) = reference { field = "after:\(name)" }
            let hint = suggestion.map { " (did you mean '\($0)'?)" } ?? ""
            return JobFileError(file: file, line: line(ofOperation: index, field: field), subject: label(index), field: "after",
                                message: "unknown dependency \(reference)\(hint)")
        case .cycle(let members):
            let indexes = members.map { member in
                operations.firstIndex { $0.name == member } ?? Int(member.dropFirst()).map { $0 - 1 } ?? -1
            }
            let described = zip(members, indexes).map { member, index in
                "'\(member)'" + (line(ofOperation: index).map { " (line \($0))" } ?? "")
            }
            let first = indexes.first.flatMap { line(ofOperation: $0, field: "after") }
            return JobFileError(file: file, line: first, field: "after",
                                message: "dependency cycle: " + (described + members.prefix(1).map { "'\($0)'" }).joined(separator: " → "))
        case let .invalidMaxConcurrent(queue, value):
            return JobFileError(file: file, line: queueLines[queue], subject: "queue '\(queue)'", field: "maxConcurrent",
                                message: "maxConcurrent must be -1 (no limit), 0 (hold) or positive, not \(value)")
        case let .invalidField(index, _, field, problem):
            return JobFileError(file: file, line: line(ofOperation: index, field: field), subject: label(index), field: field,
                                message: "\(field) \(problem)")
        }
    }
}
