/// A mistake in a job file, located by file, line and field (SEMANTICS §9).
///
/// Its description is the line a user sees, in the compiler's `FILE:LINE: message` form, e.g.
/// `jobs.yaml:14: operation 'encode': unknown dependency 'fetchh' (did you mean 'fetch'?)`.
/// A file with any error submits nothing.
public struct JobFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file as the user named it.
    public var file: String
    /// 1-based line of the offending text; nil when the error has no place in the file.
    public var line: Int?
    /// What the error is about (`operation 'encode'`, `queue 'fast'`, `defaults`); nil for the file as a whole.
    public var subject: String?
    /// The field at fault (`priority`, `after`, `commands[1]`), when there is one.
    public var field: String?
    /// What is wrong and, where it helps, what to do.
    public var message: String

    /// Creates an error.
    public init(file: String, line: Int?, subject: String? = nil, field: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.subject = subject
        self.field = field
        self.message = message
    }

    public var description: String {
        let place = line.map { "\(file):\($0)" } ?? file
        let about = subject.map { "\($0): " } ?? ""
        return "\(place): \(about)\(message)"
    }
}
