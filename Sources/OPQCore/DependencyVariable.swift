/// The environment variables through which a dependant's commands learn about a named dependency:
/// `OPQ_RESULT_<name>` (its handler's result, set by the worker), `OPQ_OUTPUT_<name>` and
/// `OPQ_OUTPUTS_<name>` (its declared output files, set by job files). One rule for the name everywhere.
public enum DependencyVariable {
    /// `prefix` and `dependency` with every character other than an ASCII letter, digit or `_` as `_`
    /// (`checksum` → `OPQ_RESULT_checksum`, `make-thumb` → `OPQ_RESULT_make_thumb`).
    public static func name(_ prefix: String, _ dependency: String) -> String {
        prefix + String(dependency.unicodeScalars.map {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") ? Character($0) : "_"
        })
    }
}
