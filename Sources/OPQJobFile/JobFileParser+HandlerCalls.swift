import OPQCore
import Yams

extension JobFileParser {
    /// The fields of one item of `handlers:`.
    static let handlerCallFields = ["handler", "payload"]

    /// Reads `handlers:`: several handler calls run at once on one worker (a remote `BlockOperation`'s
    /// execution blocks, README "Execution blocks"), each `{handler: NAME, payload: TEXT}` (payload
    /// optional), recording each item's line as `handlers[i]` in the row of ``fieldLines`` being read.
    mutating func handlerCalls(_ value: Node, _ subject: String) throws(JobFileError) -> [HandlerCall] {
        guard case .sequence(let items) = value else {
            throw reader.error(at: value, subject, field: "handlers",
                               "handlers must be a list of {handler: NAME, payload: TEXT}, not \(NodeReader.describe(value))")
        }
        try reader.count(items.count, at: value, subject, field: "handlers", maximum: Limits.maxHandlerCallsPerOperation)
        var calls: [HandlerCall] = []
        for (i, item) in items.enumerated() {
            let field = "handlers[\(i)]"
            fieldLines.append(field, reader.line(of: item))
            fieldLines.append(field + ".payload", reader.line(of: item))
            let fields = try reader.fields(item, subject, field: field, allowed: Self.handlerCallFields,
                                           what: "a mapping {handler: NAME, payload: TEXT}")
            guard let name = fields["handler"] else {
                throw reader.error(at: item, subject, field: field, "\(field) needs 'handler': the name of a handler registered on workers")
            }
            let payload = try fields["payload"].map { (node) throws(JobFileError) in
                try reader.string(node, subject, field: field + ".payload", allowsNUL: true)
            } ?? ""
            calls.append(HandlerCall(try reader.name(name, subject, field: field + ".handler"), text: payload))
        }
        return calls
    }
}
