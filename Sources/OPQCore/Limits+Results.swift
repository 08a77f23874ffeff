extension Limits {
    /// Most bytes a handler's result may have (1 MiB; README "Handler results"). A handler that returns
    /// more fails its attempt with reason `error`, naming the operation and the size.
    public static let maxResultBytes = 1 << 20
    /// Most dependency result bytes one dispatch carries (8 MiB): results beyond it are left out and
    /// marked omitted (the dependant can still read them through a client).
    public static let maxDispatchResultBytes = 8 << 20

    /// Why a result of `size` bytes, returned by handler `handler` for operation `operation` (a
    /// description such as `op 'resize' (#42)`), is refused, or nil when it fits ``maxResultBytes``.
    public static func resultSizeProblem(_ size: Int, handler: String, operation: String) -> String? {
        guard size > maxResultBytes else { return nil }
        return "handler '\(handler)' of \(operation) returned a result of \(size) bytes, over the limit of "
            + "\(maxResultBytes) bytes (1 MiB): return less (e.g. write the data to a file and return its path)"
    }
}
